#include "cluster/etcd.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"

namespace silo::cluster {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxAnswer = 64 * 1024 * 1024;

// The gateway writes int64 as JSON strings (and leaves out zero values).
int64_t int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

std::string b64(std::string_view s) {
  return base64::encode({reinterpret_cast<const unsigned char*>(s.data()), s.size()});
}

Result<std::string> unb64(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::string();
  auto decoded = base64::decode(it->get<std::string>());
  if (!decoded) return Status::internal("etcd answered a {} that is not base64", key);
  return std::move(*decoded);
}

Result<json> parse(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::internal("etcd answered something that is not JSON");
  return j;
}

Result<std::vector<EtcdKv>> kvs_of(const json& j) {
  std::vector<EtcdKv> out;
  const auto it = j.find("kvs");
  if (it == j.end()) return out;
  for (const auto& kv : *it) {
    EtcdKv e;
    ASSIGN_OR_RETURN(e.key, unb64(kv, "key"));
    ASSIGN_OR_RETURN(e.value, unb64(kv, "value"));
    e.create_revision = int_of(kv, "create_revision");
    e.mod_revision = int_of(kv, "mod_revision");
    e.lease = int_of(kv, "lease");
    out.push_back(std::move(e));
  }
  return out;
}

// The smallest key greater than every key that starts with `prefix`.
std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(prefix.back());
    if (c < 0xff) {
      ++c;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

}  // namespace

EtcdClient::EtcdClient(std::shared_ptr<http::Client> http, std::vector<http::Endpoint> endpoints)
    : http_(std::move(http)), endpoints_(std::move(endpoints)) {}

http::Awaitable<Result<std::string>> EtcdClient::post(const char* path, std::string body) {
  Status last = Status::unavailable("no etcd endpoint configured");
  const size_t first = preferred_.load();
  for (size_t k = 0; k < endpoints_.size(); ++k) {
    const size_t i = (first + k) % endpoints_.size();
    http::ClientRequest request;
    request.method = http::Method::kPost;
    request.target = path;
    request.headers.set("Content-Type", "application/json");
    auto answer = co_await http_->call(endpoints_[i], std::move(request), body, kMaxAnswer);
    if (!answer) {
      last = Status::unavailable("etcd at {}: {}", endpoints_[i].to_string(), answer.error().message());
      continue;
    }
    if (answer->status != 200) {
      last = Status::unavailable("etcd at {} answered {} to {}: {}", endpoints_[i].to_string(), answer->status, path,
                                 answer->body.substr(0, 200));
      continue;
    }
    preferred_ = i;
    co_return std::move(answer->body);
  }
  co_return last;
}

http::Awaitable<Result<std::vector<EtcdKv>>> EtcdClient::get_prefix(const std::string& prefix, int64_t* revision) {
  const json request = {{"key", b64(prefix)}, {"range_end", b64(prefix_end(prefix))}};
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/kv/range", request.dump()));
  CO_ASSIGN_OR_RETURN(const json answer, parse(body));
  if (revision != nullptr) *revision = int_of(answer.value("header", json::object()), "revision");
  co_return kvs_of(answer);
}

http::Awaitable<Result<std::optional<EtcdKv>>> EtcdClient::get(const std::string& key) {
  const json request = {{"key", b64(key)}};
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/kv/range", request.dump()));
  CO_ASSIGN_OR_RETURN(const json answer, parse(body));
  CO_ASSIGN_OR_RETURN(std::vector<EtcdKv> kvs, kvs_of(answer));
  if (kvs.empty()) co_return std::optional<EtcdKv>();
  co_return std::optional<EtcdKv>(std::move(kvs.front()));
}

http::Awaitable<Result<EtcdTxnResult>> EtcdClient::txn(std::vector<EtcdCompare> compares, std::vector<EtcdPut> puts) {
  json request = {{"compare", json::array()}, {"success", json::array()}};
  for (const auto& c : compares) {
    json j = {{"key", b64(c.key)}, {"result", "EQUAL"}};
    switch (c.target) {
      case EtcdCompare::Target::kCreateRevision:
        j["target"] = "CREATE";
        j["create_revision"] = std::to_string(c.revision);
        break;
      case EtcdCompare::Target::kModRevision:
        j["target"] = "MOD";
        j["mod_revision"] = std::to_string(c.revision);
        break;
      case EtcdCompare::Target::kValue:
        j["target"] = "VALUE";
        j["value"] = b64(c.value);
        break;
    }
    request["compare"].push_back(std::move(j));
  }
  for (const auto& p : puts) {
    json put = {{"key", b64(p.key)}, {"value", b64(p.value)}};
    if (p.lease != 0) put["lease"] = std::to_string(p.lease);
    request["success"].push_back({{"request_put", std::move(put)}});
  }
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/kv/txn", request.dump()));
  CO_ASSIGN_OR_RETURN(const json answer, parse(body));
  EtcdTxnResult result;
  result.succeeded = answer.value("succeeded", false);
  result.revision = int_of(answer.value("header", json::object()), "revision");
  co_return result;
}

http::Awaitable<Result<int64_t>> EtcdClient::grant_lease(int64_t ttl_seconds) {
  const json request = {{"TTL", ttl_seconds}};
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/lease/grant", request.dump()));
  CO_ASSIGN_OR_RETURN(const json answer, parse(body));
  const int64_t id = int_of(answer, "ID");
  if (id == 0) co_return Status::internal("etcd granted no lease: {}", body.substr(0, 200));
  co_return id;
}

http::Awaitable<Status> EtcdClient::keep_alive(int64_t lease) {
  const json request = {{"ID", std::to_string(lease)}};
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/lease/keepalive", request.dump()));
  CO_ASSIGN_OR_RETURN(const json answer, parse(body));
  // An expired lease comes back without a TTL.
  if (int_of(answer.value("result", json::object()), "TTL") <= 0) co_return Status::not_found("lease {:x} expired", lease);
  co_return Status::ok();
}

http::Awaitable<Status> EtcdClient::revoke(int64_t lease) {
  const json request = {{"ID", std::to_string(lease)}};
  CO_RETURN_IF_ERROR((co_await post("/v3/lease/revoke", request.dump())).status());
  co_return Status::ok();
}

}  // namespace silo::cluster
