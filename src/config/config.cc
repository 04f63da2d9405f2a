#include "config/config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace silo::config {
namespace {

using nlohmann::json;

// Reads one JSON object's fields into typed destinations; records the first error.
class Reader {
 public:
  Reader(const json& object, std::string section) : object_(object), section_(std::move(section)) {}

  template <typename T>
  void field(const char* key, T& out) {
    seen_.push_back(key);
    const auto it = object_.find(key);
    if (it == object_.end() || !status_.is_ok()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) return fail(key, "a string");
      out = it->template get<std::string>();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (!it->is_array()) return fail(key, "an array of strings");
      out.clear();
      for (const auto& v : *it) {
        if (!v.is_string()) return fail(key, "an array of strings");
        out.push_back(v.template get<std::string>());
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) return fail(key, "true or false");
      out = it->template get<bool>();
    } else {
      if (!it->is_number_unsigned()) return fail(key, "a non-negative integer");
      const uint64_t v = it->template get<uint64_t>();
      if (v > std::numeric_limits<T>::max()) return fail(key, "a smaller integer");
      out = static_cast<T>(v);
    }
  }

  template <typename Duration>
  void duration(const char* key, Duration& out) {
    int64_t count = out.count();
    uint64_t value = static_cast<uint64_t>(count);
    field(key, value);
    out = Duration(static_cast<int64_t>(value));
  }

  template <typename Enum>
  void choice(const char* key, Enum& out, std::initializer_list<std::pair<const char*, Enum>> options) {
    std::string text;
    field(key, text);
    if (text.empty() || !status_.is_ok()) return;
    std::string names;
    for (const auto& [name, value] : options) {
      if (text == name) {
        out = value;
        return;
      }
      names += names.empty() ? name : std::string("|") + name;
    }
    status_ = Status::invalid_argument("config: {}.{} is \"{}\"; valid: {}", section_, key, text, names);
  }

  // Registers a key whose value the caller reads itself.
  void known(const char* key) { seen_.push_back(key); }

  // Every key must be one the reader asked for: a typo must not pass silently.
  Status finish() {
    if (!status_.is_ok()) return status_;
    for (const auto& [key, value] : object_.items()) {
      if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) {
        return Status::invalid_argument("config: unknown key {}.{}", section_, key);
      }
    }
    return Status::ok();
  }

 private:
  void fail(const char* key, const char* expected) {
    status_ = Status::invalid_argument("config: {}.{} must be {}", section_, key, expected);
  }
  const json& object_;
  std::string section_;
  std::vector<std::string> seen_;
  Status status_;
};

Status read_node(const json& j, NodeConfig& n) {
  Reader r(j, "node");
  r.field("id", n.id);
  r.choice("role", n.role, {{"proxy", Role::kProxy}, {"target", Role::kTarget}, {"all", Role::kAll}});
  r.field("host", n.host);
  r.field("port", n.port);
  r.field("public_url", n.public_url);
  r.field("data_dir", n.data_dir);
  r.field("mountpaths", n.mountpaths);
  r.field("primary_url", n.primary_url);
  r.field("log_level", n.log_level);
  r.field("ready_file", n.ready_file);
  r.field("io_threads", n.io_threads);
  r.field("disk_threads_per_mountpath", n.disk_threads_per_mountpath);
  r.field("open_files", n.open_files);
  r.known("tls");
  if (const auto it = j.find("tls"); it != j.end()) {
    if (!it->is_object()) return Status::invalid_argument("config: node.tls must be an object");
    Reader t(*it, "node.tls");
    t.field("cert_file", n.tls.cert_file);
    t.field("key_file", n.tls.key_file);
    t.field("ca_file", n.tls.ca_file);
    t.field("require_client_cert", n.tls.require_client_cert);
    RETURN_IF_ERROR(t.finish());
  }
  return r.finish();
}

Status read_http(const json& j, HttpLimits& h) {
  Reader r(j, "cluster.http");
  r.field("max_header_bytes", h.max_header_bytes);
  r.field("max_connections", h.max_connections);
  r.field("max_requests_in_flight", h.max_requests_in_flight);
  r.duration("idle_timeout_s", h.idle_timeout);
  r.duration("header_timeout_s", h.header_timeout);
  r.duration("body_idle_timeout_s", h.body_idle_timeout);
  r.duration("drain_timeout_s", h.drain_timeout);
  return r.finish();
}

Status read_auth(const json& j, AuthConfig& a) {
  Reader r(j, "cluster.auth");
  r.field("admin_access_key", a.admin_access_key);
  r.field("admin_secret_key", a.admin_secret_key);
  r.field("cluster_secret", a.cluster_secret);
  return r.finish();
}

Status read_s3(const json& j, S3Config& s) {
  Reader r(j, "cluster.s3");
  r.field("domains", s.domains);
  r.field("region", s.region);
  r.duration("multipart_upload_ttl_h", s.multipart_upload_ttl);
  r.field("min_part_size", s.min_part_size);
  r.field("max_object_size", s.max_object_size);
  return r.finish();
}

Status read_meta_store(const json& j, MetaStoreConfig& m) {
  Reader r(j, "cluster.meta_store");
  r.choice("kind", m.kind, {{"local", MetaStoreConfig::Kind::kLocal}, {"etcd", MetaStoreConfig::Kind::kEtcd}});
  r.field("etcd_endpoints", m.etcd_endpoints);
  r.field("etcd_prefix", m.etcd_prefix);
  r.duration("primary_lease_s", m.primary_lease);
  return r.finish();
}

Status read_backend_defaults(const json& j, BackendDefaults& b, std::string section) {
  Reader r(j, std::move(section));
  r.field("endpoint", b.endpoint);
  r.field("region", b.region);
  r.field("access_key", b.access_key);
  r.field("secret_key", b.secret_key);
  return r.finish();
}

Status read_cache(const json& j, CacheConfig& c) {
  Reader r(j, "cluster.cache");
  for (auto [key, defaults] : {std::pair{"s3", &c.s3}, std::pair{"gs", &c.gs}}) {
    r.known(key);
    const auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_object()) return Status::invalid_argument("config: cluster.cache.{} must be an object", key);
    RETURN_IF_ERROR(read_backend_defaults(*it, *defaults, std::string("cluster.cache.") + key));
  }
  r.field("first_access", c.first_access);
  r.field("low_wm", c.low_wm);
  r.field("high_wm", c.high_wm);
  r.field("oos_wm", c.oos_wm);
  r.duration("space_check_interval_ms", c.space_check_interval);
  r.field("prefetch_workers", c.prefetch_workers);
  r.field("range_get_size", c.range_get_size);
  r.field("range_get_streams", c.range_get_streams);
  return r.finish();
}

// Reads the optional sub-object `key` of `j` with `read`.
template <typename Section, typename ReadFn>
Status read_section(Reader& r, const json& j, const char* key, Section& out, ReadFn read) {
  r.known(key);
  const auto it = j.find(key);
  if (it == j.end()) return Status::ok();
  if (!it->is_object()) return Status::invalid_argument("config: cluster.{} must be an object", key);
  return read(*it, out);
}

Status read_cluster(const json& j, ClusterConfig& c) {
  Reader r(j, "cluster");
  r.duration("keepalive_interval_ms", c.keepalive_interval);
  r.duration("keepalive_timeout_ms", c.keepalive_timeout);
  r.duration("rebalance_give_up_s", c.rebalance_give_up);
  r.choice("durability", c.durability, {{"fsync", Durability::kFsync}, {"page_cache", Durability::kPageCache}});
  r.choice("proxy_mode", c.proxy_mode, {{"stream", ProxyMode::kStream}, {"redirect", ProxyMode::kRedirect}});
  RETURN_IF_ERROR(read_section(r, j, "http", c.http, read_http));
  RETURN_IF_ERROR(read_section(r, j, "auth", c.auth, read_auth));
  RETURN_IF_ERROR(read_section(r, j, "s3", c.s3, read_s3));
  RETURN_IF_ERROR(read_section(r, j, "meta_store", c.meta_store, read_meta_store));
  RETURN_IF_ERROR(read_section(r, j, "cache", c.cache, read_cache));
  return r.finish();
}

}  // namespace

namespace {

constexpr const char* kMasked = "********";

json backend_defaults_json(const BackendDefaults& b) {
  return {{"endpoint", b.endpoint},
          {"region", b.region},
          {"access_key", b.access_key},
          {"secret_key", b.secret_key.empty() ? "" : kMasked}};
}

}  // namespace

namespace {

json cluster_json(const ClusterConfig& c) {
  return json{
      {"keepalive_interval_ms", c.keepalive_interval.count()},
      {"keepalive_timeout_ms", c.keepalive_timeout.count()},
      {"rebalance_give_up_s", c.rebalance_give_up.count()},
      {"durability", c.durability == Durability::kFsync ? "fsync" : "page_cache"},
      {"proxy_mode", c.proxy_mode == ProxyMode::kStream ? "stream" : "redirect"},
      {"http",
       {{"max_header_bytes", c.http.max_header_bytes},
        {"max_connections", c.http.max_connections},
        {"max_requests_in_flight", c.http.max_requests_in_flight},
        {"idle_timeout_s", c.http.idle_timeout.count()},
        {"header_timeout_s", c.http.header_timeout.count()},
        {"body_idle_timeout_s", c.http.body_idle_timeout.count()},
        {"drain_timeout_s", c.http.drain_timeout.count()}}},
      {"auth",
       {{"admin_access_key", c.auth.admin_access_key},
        {"admin_secret_key", kMasked},
        {"cluster_secret", c.auth.cluster_secret.empty() ? "" : kMasked}}},
      {"s3",
       {{"domains", c.s3.domains},
        {"region", c.s3.region},
        {"multipart_upload_ttl_h", c.s3.multipart_upload_ttl.count()},
        {"min_part_size", c.s3.min_part_size},
        {"max_object_size", c.s3.max_object_size}}},
      {"meta_store",
       {{"kind", c.meta_store.kind == MetaStoreConfig::Kind::kLocal ? "local" : "etcd"},
        {"etcd_endpoints", c.meta_store.etcd_endpoints},
        {"etcd_prefix", c.meta_store.etcd_prefix},
        {"primary_lease_s", c.meta_store.primary_lease.count()}}},
      {"cache",
       {{"s3", backend_defaults_json(c.cache.s3)},
        {"gs", backend_defaults_json(c.cache.gs)},
        {"first_access", c.cache.first_access},
        {"low_wm", c.cache.low_wm},
        {"high_wm", c.cache.high_wm},
        {"oos_wm", c.cache.oos_wm},
        {"space_check_interval_ms", c.cache.space_check_interval.count()},
        {"prefetch_workers", c.cache.prefetch_workers},
        {"range_get_size", c.cache.range_get_size},
        {"range_get_streams", c.cache.range_get_streams}}}};
}

}  // namespace

std::string to_json(const Config& config) {
  const NodeConfig& n = config.node;
  const json node{{"id", n.id},
                  {"role", std::string(role_name(n.role))},
                  {"host", n.host},
                  {"port", n.port},
                  {"public_url", n.public_url},
                  {"data_dir", n.data_dir},
                  {"mountpaths", n.mountpaths},
                  {"primary_url", n.primary_url},
                  {"log_level", n.log_level},
                  {"ready_file", n.ready_file},
                  {"io_threads", n.io_threads},
                  {"disk_threads_per_mountpath", n.disk_threads_per_mountpath},
                  {"open_files", n.open_files},
                  {"tls",
                   {{"cert_file", n.tls.cert_file},
                    {"key_file", n.tls.key_file},
                    {"ca_file", n.tls.ca_file},
                    {"require_client_cert", n.tls.require_client_cert}}}};
  return json{{"node", node}, {"cluster", cluster_json(config.cluster)}}.dump();
}

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kProxy: return "proxy";
    case Role::kTarget: return "target";
    case Role::kAll: return "all";
  }
  return "?";
}
bool is_proxy(Role role) { return role != Role::kTarget; }
bool is_target(Role role) { return role != Role::kProxy; }

Result<Config> parse(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded()) return Status::invalid_argument("config: not valid JSON");
  if (!doc.is_object()) return Status::invalid_argument("config: the document must be a JSON object");
  Config config;
  for (const auto& [key, value] : doc.items()) {
    if (key != "node" && key != "cluster") {
      return Status::invalid_argument("config: unknown section '{}' (valid: node, cluster)", key);
    }
    if (!value.is_object()) return Status::invalid_argument("config: '{}' must be an object", key);
  }
  if (doc.contains("node")) RETURN_IF_ERROR(read_node(doc["node"], config.node));
  if (doc.contains("cluster")) RETURN_IF_ERROR(read_cluster(doc["cluster"], config.cluster));
  return config;
}

Result<Config> load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::not_found("config: cannot read {}", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto config = parse(buffer.str());
  if (!config) return Status(config.error().code(), fmt::format("{}: {}", path, config.error().message()));
  return config;
}

Status finalize(Config& config) {
  NodeConfig& n = config.node;
  if (n.host.empty()) return Status::invalid_argument("config: node.host must not be empty");
  if (n.id.empty()) n.id = fmt::format("{}-{}", n.host, n.port);
  for (char c : n.id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return Status::invalid_argument("config: node.id '{}' may hold only letters, digits, '-', '_', '.'", n.id);
    }
  }
  if (n.data_dir.empty()) return Status::invalid_argument("config: node.data_dir is required (the node's state lives there)");
  const TlsConfig& tls = n.tls;
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::invalid_argument("config: node.tls needs both cert_file and key_file (--tls-cert, --tls-key), or neither");
  }
  if (tls.require_client_cert && (!tls.is_enabled() || tls.ca_file.empty())) {
    return Status::invalid_argument(
        "config: node.tls.require_client_cert needs cert_file, key_file and the ca_file that client certificates chain to");
  }
  const std::string scheme = tls.is_enabled() ? "https://" : "http://";
  if (n.public_url.empty()) n.public_url = fmt::format("{}{}:{}", scheme, n.host, n.port);
  if (!n.public_url.starts_with(scheme)) {
    return Status::invalid_argument("config: node.public_url '{}' must start with {} ({})", n.public_url, scheme,
                                    tls.is_enabled() ? "the port serves HTTPS only" : "TLS is not configured");
  }
  // One set of flags for every proxy (a Kubernetes StatefulSet): the node that the primary
  // URL names is the primary, and joins nobody.
  const auto without_slash = [](std::string_view url) { return url.ends_with('/') ? url.substr(0, url.size() - 1) : url; };
  if (!n.primary_url.empty() && without_slash(n.primary_url) == without_slash(n.public_url)) {
    if (!is_proxy(n.role)) {
      return Status::invalid_argument("config: node.primary_url '{}' is this node's own URL, but only a proxy can be the primary",
                                      n.primary_url);
    }
    n.primary_url.clear();
  }
  if (is_target(n.role) && n.mountpaths.empty()) n.mountpaths.push_back(n.data_dir + "/mp0");
  if (!is_target(n.role) && !n.mountpaths.empty()) {
    return Status::invalid_argument("config: node.mountpaths is set but role '{}' stores no objects", role_name(n.role));
  }
  if (n.io_threads > 256) return Status::invalid_argument("config: node.io_threads must be 0 (one per CPU) or 1..256");
  if (n.disk_threads_per_mountpath == 0 || n.disk_threads_per_mountpath > 256) {
    return Status::invalid_argument("config: node.disk_threads_per_mountpath must be 1..256");
  }
  if (n.open_files > (1u << 20)) return Status::invalid_argument("config: node.open_files must be 0..1048576");
  return check_cluster(config.cluster);
}

Status check_cluster(const ClusterConfig& c) {
  const MetaStoreConfig& m = c.meta_store;
  if (m.kind == MetaStoreConfig::Kind::kEtcd) {
    if (m.etcd_endpoints.empty()) {
      return Status::invalid_argument("config: cluster.meta_store.kind etcd needs etcd_endpoints (\"http://host:2379\")");
    }
    if (m.etcd_prefix.empty() || m.etcd_prefix.front() != '/') {
      return Status::invalid_argument("config: cluster.meta_store.etcd_prefix must start with '/'");
    }
    if (m.primary_lease.count() < 2 || m.primary_lease.count() > 60) {
      return Status::invalid_argument("config: cluster.meta_store.primary_lease_s must be 2..60");
    }
  }
  if (c.keepalive_interval.count() < 10) return Status::invalid_argument("config: cluster.keepalive_interval_ms must be >= 10");
  if (c.keepalive_timeout < 2 * c.keepalive_interval) {
    return Status::invalid_argument("config: cluster.keepalive_timeout_ms must be at least twice keepalive_interval_ms");
  }
  if (c.http.max_header_bytes < 1024) return Status::invalid_argument("config: cluster.http.max_header_bytes must be >= 1024");
  if (c.http.max_connections == 0) return Status::invalid_argument("config: cluster.http.max_connections must be > 0");
  if (c.http.max_requests_in_flight == 0) {
    return Status::invalid_argument("config: cluster.http.max_requests_in_flight must be > 0");
  }
  for (auto t : {c.http.idle_timeout, c.http.header_timeout, c.http.body_idle_timeout}) {
    if (t.count() == 0) return Status::invalid_argument("config: cluster.http timeouts must be > 0 s");
  }
  if (c.auth.admin_access_key.size() < 3 || c.auth.admin_access_key.size() > 128) {
    return Status::invalid_argument("config: cluster.auth.admin_access_key must be 3..128 characters");
  }
  if (c.auth.admin_secret_key.size() < 8) {
    return Status::invalid_argument("config: cluster.auth.admin_secret_key must be at least 8 characters");
  }
  const CacheConfig& cache = c.cache;
  if (!(cache.low_wm < cache.high_wm && cache.high_wm <= cache.oos_wm && cache.oos_wm <= 100)) {
    return Status::invalid_argument("config: cluster.cache needs low_wm < high_wm <= oos_wm <= 100 (percent)");
  }
  if (!cache.first_access.empty() && cache.first_access != "s3" && cache.first_access != "gs") {
    return Status::invalid_argument("config: cluster.cache.first_access must be \"s3\", \"gs\" or \"\"");
  }
  if (cache.prefetch_workers == 0 || cache.range_get_streams == 0 || cache.range_get_size < (1u << 20)) {
    return Status::invalid_argument(
        "config: cluster.cache.prefetch_workers and range_get_streams must be > 0, range_get_size >= 1 MiB");
  }
  if (c.s3.region.empty()) return Status::invalid_argument("config: cluster.s3.region must not be empty");
  if (c.s3.multipart_upload_ttl.count() == 0) {
    return Status::invalid_argument("config: cluster.s3.multipart_upload_ttl_h must be > 0");
  }
  if (c.s3.max_object_size == 0) return Status::invalid_argument("config: cluster.s3.max_object_size must be > 0");
  if (c.cache.space_check_interval.count() == 0) {
    return Status::invalid_argument("config: cluster.cache.space_check_interval_ms must be > 0");
  }
  return Status::ok();
}

namespace {

// Keys of the cluster section (dotted, below "cluster.") that may change at run time:
// every reader of them reads the live config (docs/configuration.md lists them). A
// prefix ending in '.' admits every key below it.
constexpr std::string_view kRuntimeSettable[] = {
    "durability", "proxy_mode", "s3.region", "s3.multipart_upload_ttl_h", "s3.max_object_size", "cache.",
};
constexpr std::string_view kSecretKeys[] = {"cache.s3.secret_key", "cache.gs.secret_key"};

std::string joined(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

// Whether some settable key lies at or below the section `path` ("s3", "cache.gs").
bool has_settable_below(std::string_view path) {
  for (std::string_view key : kRuntimeSettable) {
    if (key.starts_with(path) && key.size() > path.size() && key[path.size()] == '.') return true;
    if (key.back() == '.' && path.starts_with(key)) return true;
  }
  return false;
}

// Checks that `patch` (below the cluster section's `known` object at `prefix`) names only
// known, runtime-settable keys; null is allowed wherever a settable key could be removed.
Status check_patch_keys(const json& patch, const json& known, const std::string& prefix) {
  for (const auto& [key, value] : patch.items()) {
    const std::string path = joined(prefix, key);
    const auto it = known.find(key);
    if (it == known.end()) return Status::invalid_argument("config: unknown key cluster.{}", path);
    if (it->is_object()) {  // a section
      // A section with nothing settable: name the key inside it the patch gives.
      if (!has_settable_below(path) && (!value.is_object() || value.empty())) {
        return Status::invalid_argument(
            "config: cluster.{} is read at start only; set it in each node's config file and restart the nodes", path);
      }
      if (value.is_null()) continue;
      if (!value.is_object()) return Status::invalid_argument("config: cluster.{} must be an object", path);
      RETURN_IF_ERROR(check_patch_keys(value, *it, path));
      continue;
    }
    if (!is_runtime_settable(path)) {
      return Status::invalid_argument(
          "config: cluster.{} is read at start only; set it in each node's config file and restart the nodes", path);
    }
  }
  return Status::ok();
}

Status check_patch_keys(const json& patch) {
  return check_patch_keys(patch, cluster_json(ClusterConfig{}), "");
}

// The JSON object in `text`; "" is the empty object.
Result<json> parse_object(std::string_view text, std::string_view what) {
  if (text.empty()) return json::object();
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::invalid_argument("config: {} is not valid JSON", what);
  if (!doc.is_object()) return Status::invalid_argument("config: {} must be a JSON object", what);
  return doc;
}

// The value at dotted `path` of `doc`, or null when absent.
json* find_path(json& doc, std::string_view path) {
  json* at = &doc;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return at;
}

// Removes objects left empty (an override removed was their last key).
void prune_empty(json& doc) {
  for (auto it = doc.begin(); it != doc.end();) {
    if (it->is_object()) prune_empty(*it);
    if (it->is_object() && it->empty()) {
      it = doc.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

bool is_runtime_settable(std::string_view key) {
  if (key.starts_with("cluster.")) key.remove_prefix(8);
  for (std::string_view settable : kRuntimeSettable) {
    if (settable.back() == '.' ? key.starts_with(settable) : key == settable) return true;
  }
  return false;
}

Status apply_overrides(ClusterConfig& cluster, std::string_view overrides_json) {
  ASSIGN_OR_RETURN(const json doc, parse_object(overrides_json, "the overrides"));
  if (doc.empty()) return Status::ok();
  RETURN_IF_ERROR(check_patch_keys(doc));
  ClusterConfig changed = cluster;
  RETURN_IF_ERROR(read_cluster(doc, changed));
  RETURN_IF_ERROR(check_cluster(changed));
  cluster = std::move(changed);
  return Status::ok();
}

Result<std::string> merge_overrides(std::string_view current_json, std::string_view patch_json) {
  ASSIGN_OR_RETURN(json patch, parse_object(patch_json, "the change"));
  RETURN_IF_ERROR(check_patch_keys(patch));
  for (std::string_view secret : kSecretKeys) {
    // The mask GET shows, sent back: keep the secret as it is.
    const size_t dot = secret.rfind('.');
    json* section = find_path(patch, secret.substr(0, dot));
    if (section == nullptr || !section->is_object()) continue;
    const auto it = section->find(std::string(secret.substr(dot + 1)));
    if (it != section->end() && it->is_string() && it->get<std::string>() == kMasked) section->erase(it);
  }
  ASSIGN_OR_RETURN(json merged, parse_object(current_json, "the stored overrides"));
  merged.merge_patch(patch);
  prune_empty(merged);
  if (merged.empty()) return std::string();
  return merged.dump();
}

std::string mask_overrides(std::string_view overrides_json) {
  auto doc = parse_object(overrides_json, "the overrides");
  if (!doc) return "{}";
  for (std::string_view secret : kSecretKeys) {
    json* value = find_path(*doc, secret);
    if (value != nullptr && value->is_string() && !value->get<std::string>().empty()) *value = kMasked;
  }
  return doc->dump();
}

}  // namespace silo::config
