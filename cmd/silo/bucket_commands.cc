// silo bucket create|ls|rm|props show|props set, and silo ls.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "commands.h"

namespace silo::cli {
namespace {

// Past this many buckets `bucket ls` shows "-" for backends. The limit dates from when
// each backend took a request of its own; the list carries them now, but the output stays
// as scripts know it.
constexpr size_t kMaxBucketsShownWithBackends = 100;

bool is_integer(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// KEY=VALUE pairs (copies=2 ec.data=4 backend.url=s3://x) as the JSON properties body:
// dotted keys become nested objects, `ec=none` / `backend=none` remove the setting.
// `current` fills the half of ec data/parity the user left out.
Result<std::string> props_json(const std::vector<std::string>& pairs,
                               const client::BucketInfo* current) {
  static const std::set<std::string, std::less<>> kBooleans = {"anonymous_read", "verify_reads",
                                                               "backend.revalidate"};
  static const std::set<std::string, std::less<>> kNumbers = {"copies", "ec.data", "ec.parity"};
  std::map<std::string, std::string> top;                            // key -> JSON value
  std::map<std::string, std::map<std::string, std::string>> nested;  // group -> key -> JSON value
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::invalid_argument(
          "'{}' is not KEY=VALUE (e.g. copies=2, ec.data=4, backend.url=s3://b)", pair);
    }
    std::string key = pair.substr(0, eq);
    const std::string value = pair.substr(eq + 1);
    if (key == "mirror.copies") key = "copies";  // AIStore's name
    if (key == "backend" && value != "none" && value != "null") key = "backend.url";
    std::string json;
    if ((key == "ec" || key == "backend") && (value == "none" || value == "null")) {
      top[key] = "null";
      continue;
    }
    if (key == "ec") {  // ec=K+M
      const size_t plus = value.find('+');
      const std::string data = value.substr(0, plus);
      const std::string parity = plus == std::string::npos ? "" : value.substr(plus + 1);
      if (!is_integer(data) || !is_integer(parity)) {
        return Status::invalid_argument("ec must be DATA+PARITY (e.g. ec=4+2) or none, not '{}'",
                                        value);
      }
      nested["ec"]["data"] = data;
      nested["ec"]["parity"] = parity;
      continue;
    }
    if (kBooleans.contains(key)) {
      if (value != "true" && value != "false")
        return Status::invalid_argument("{} must be true or false", key);
      json = value;
    } else if (kNumbers.contains(key)) {
      if (!is_integer(value))
        return Status::invalid_argument("{} must be a whole number, not '{}'", key, value);
      json = value;
    } else if (key == "ec.min_size") {
      ASSIGN_OR_RETURN(const uint64_t bytes, parse_size(value));
      json = std::to_string(bytes);
    } else {
      json = json_string(value);
    }
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      top[key] = json;
    } else {
      nested[key.substr(0, dot)][key.substr(dot + 1)] = json;
    }
  }
  if (auto ec = nested.find("ec"); ec != nested.end() && current != nullptr) {
    if (!ec->second.contains("data") && current->entry.ec_data > 0) {
      ec->second["data"] = std::to_string(current->entry.ec_data);
    }
    if (!ec->second.contains("parity") && current->entry.ec_parity > 0) {
      ec->second["parity"] = std::to_string(current->entry.ec_parity);
    }
  }
  std::string out = "{";
  auto add = [&out](const std::string& key, const std::string& value) {
    if (out.size() > 1) out += ',';
    out += json_string(key) + ":" + value;
  };
  for (const auto& [key, value] : top) add(key, value);
  for (const auto& [group, fields] : nested) {
    if (top.contains(group))
      return Status::invalid_argument("'{}=none' and '{}.*' contradict each other", group, group);
    std::string object = "{";
    for (const auto& [key, value] : fields) {
      if (object.size() > 1) object += ',';
      object += json_string(key) + ":" + value;
    }
    add(group, object + "}");
  }
  return out + "}";
}

std::string layout_of(const client::BucketEntry& b) {
  if (b.ec_data > 0) return fmt::format("ec {}+{}", b.ec_data, b.ec_parity);
  return fmt::format("copies {}", b.copies);
}

// The properties as KEY=VALUE lines: the names `props set` takes.
std::vector<std::pair<std::string, std::string>> props_pairs(const client::BucketInfo& info) {
  const auto& e = info.entry;
  std::vector<std::pair<std::string, std::string>> out = {
      {"copies", std::to_string(e.copies)},
      {"ec", e.ec_data > 0 ? fmt::format("{}+{}", e.ec_data, e.ec_parity) : "none"},
  };
  if (e.ec_data > 0) {
    out.emplace_back("ec.data", std::to_string(e.ec_data));
    out.emplace_back("ec.parity", std::to_string(e.ec_parity));
    out.emplace_back("ec.min_size", std::to_string(e.ec_min_size));
  }
  out.emplace_back("durability", e.durability);
  out.emplace_back("write", e.write);
  out.emplace_back("verify_reads", e.verify_reads ? "true" : "false");
  out.emplace_back("anonymous_read", e.anonymous_read ? "true" : "false");
  out.emplace_back("backend", e.is_remote() ? e.backend_url : "none");
  if (e.is_remote()) {
    out.emplace_back("backend.url", e.backend_url);
    out.emplace_back("backend.endpoint", e.backend_endpoint);
    out.emplace_back("backend.region", e.backend_region);
    out.emplace_back("backend.access_key", e.backend_access_key);
    out.emplace_back("backend.revalidate", e.backend_revalidate ? "true" : "false");
  }
  return out;
}

Status show_props(Context& context, client::Client& c, const std::string& bucket) {
  ASSIGN_OR_RETURN(const client::BucketInfo info, c.bucket_info(bucket));
  if (context.options.is_json) {
    std::printf("%s\n", info.json.c_str());
    return Status::ok();
  }
  Table table({"PROPERTY", "VALUE"});
  for (auto& [key, value] : props_pairs(info)) table.add({key, value.empty() ? "-" : value});
  table.print();
  return Status::ok();
}

Result<std::string> bucket_of(std::string_view text) {
  ASSIGN_OR_RETURN(const ObjectAddress address, parse_address(text));
  if (!address.name.empty())
    return Status::invalid_argument("'{}' names an object; a bucket was expected", text);
  return address.bucket;
}

struct CreateOptions {
  std::string bucket;
  std::vector<std::string> props;
  bool is_existing_ok = false;
};

Status create_bucket(Context& context, const CreateOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const std::string bucket, bucket_of(o.bucket));
  std::string body;
  if (!o.props.empty()) {
    ASSIGN_OR_RETURN(body, props_json(o.props, nullptr));
  }
  Status created = c->create_bucket(bucket, body);
  if (created.code() == Code::kAlreadyExists && o.is_existing_ok) created = Status::ok();
  RETURN_IF_ERROR(created);
  if (context.options.is_json) {
    std::printf("{\"bucket\":%s,\"created\":true}\n", json_string(bucket).c_str());
  } else {
    std::printf("created bucket %s\n", bucket.c_str());
  }
  return Status::ok();
}

Status list_buckets(Context& context) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  if (context.options.is_json) {
    ASSIGN_OR_RETURN(const client::Response r, c->request(http::Method::kGet, "/v1/buckets"));
    RETURN_IF_ERROR(client::Client::status_of(r, "GET /v1/buckets"));
    std::printf("%s\n", r.body.c_str());
    return Status::ok();
  }
  ASSIGN_OR_RETURN(const auto buckets, c->list_buckets());
  Table table({"NAME", "LAYOUT", "DURABILITY", "WRITE", "BACKEND"});
  for (const auto& b : buckets) {
    std::string backend = "-";
    if (buckets.size() <= kMaxBucketsShownWithBackends) {
      if (b.is_remote()) backend = b.backend_url;
    }
    table.add({b.name, layout_of(b), b.durability, b.write, backend});
  }
  if (table.rows() == 0) {
    std::printf("no buckets (create one with 'silo bucket create NAME')\n");
  } else {
    table.print();
  }
  return Status::ok();
}

Status remove_buckets(Context& context, const std::vector<std::string>& names) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  std::vector<std::string> removed;
  for (const auto& name : names) {
    ASSIGN_OR_RETURN(const std::string bucket, bucket_of(name));
    RETURN_IF_ERROR(c->delete_bucket(bucket));
    removed.push_back(bucket);
    if (!context.options.is_json) std::printf("removed bucket %s\n", bucket.c_str());
  }
  if (context.options.is_json) {
    std::string list;
    for (const auto& b : removed) list += (list.empty() ? "" : ",") + json_string(b);
    std::printf("{\"removed\":[%s]}\n", list.c_str());
  }
  return Status::ok();
}

Status set_props(Context& context, const std::string& bucket_text,
                 const std::vector<std::string>& pairs) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const std::string bucket, bucket_of(bucket_text));
  ASSIGN_OR_RETURN(const client::BucketInfo current, c->bucket_info(bucket));
  ASSIGN_OR_RETURN(const std::string body, props_json(pairs, &current));
  RETURN_IF_ERROR(c->set_bucket_props(bucket, body));
  return show_props(context, *c, bucket);
}

struct ListOptions {
  std::string address;
  bool is_recursive = false;
  bool is_long = false;
  bool is_cached_only = false;
  bool is_summary = false;
  bool lists_members = false;  // --members: the members of an archive object
  size_t limit = 0;
};

// `silo ls BUCKET/SHARD.tar --members`: an archive's members from its index.
Status list_members(Context& context, const ListOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const ObjectAddress address, parse_address(o.address));
  if (address.name.empty()) {
    return Status::invalid_argument("--members lists an archive object's members: write BUCKET/NAME, not '{}'",
                                    o.address);
  }
  ASSIGN_OR_RETURN(const wire::ArchiveList list, c->list_members(address.bucket, address.name));
  uint64_t bytes = 0;
  for (const auto& m : list.members) bytes += m.size;
  if (context.options.is_json) {
    std::string out = fmt::format(R"({{"bucket":{},"name":{},"format":{},"members":[)", json_string(address.bucket),
                                  json_string(address.name), json_string(list.format));
    for (size_t i = 0; i < list.members.size(); ++i) {
      const auto& m = list.members[i];
      out += fmt::format(R"({}{{"name":{},"size":{},"offset":{}}})", i == 0 ? "" : ",", json_string(m.name), m.size,
                         m.offset);
    }
    std::printf("%s]}\n", out.c_str());
    return Status::ok();
  }
  if (!o.is_summary) {
    std::vector<std::string> header = {"NAME", "SIZE"};
    if (o.is_long) header.push_back("OFFSET");
    Table table(header);
    size_t shown = 0;
    for (const auto& m : list.members) {
      if (o.limit != 0 && shown++ >= o.limit) break;
      std::vector<std::string> row = {m.name, o.is_long ? std::to_string(m.size) : human_bytes(m.size)};
      if (o.is_long) row.push_back(std::to_string(m.offset));
      table.add(row);
    }
    if (table.rows() > 0) table.print();
  }
  if (o.is_summary || o.is_long) {
    std::printf("%zu members, %s (%llu bytes), %s\n", list.members.size(), human_bytes(bytes).c_str(),
                static_cast<unsigned long long>(bytes), list.format.c_str());
  }
  return Status::ok();
}

std::string entry_json(const client::ObjectEntry& e, bool is_remote) {
  std::string out =
      fmt::format(R"({{"name":{},"size":{},"mtime":{},"etag":{})", json_string(e.name), e.size,
                  e.mtime_unix_nanos, json_string(e.etag));
  if (is_remote) out += fmt::format(R"(,"cached":{})", e.cached ? "true" : "false");
  return out + "}";
}

Status list_objects(Context& context, const ListOptions& o) {
  if (o.lists_members) return list_members(context, o);
  if (o.address.empty()) return list_buckets(context);
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const ObjectAddress address, parse_address(o.address));
  ASSIGN_OR_RETURN(const client::BucketInfo info, c->bucket_info(address.bucket));
  const bool is_remote = info.entry.is_remote();
  const std::string& prefix = address.name;

  std::vector<client::ObjectEntry> objects;
  std::set<std::string> directories;  // without --recursive: the next level under the prefix
  uint64_t count = 0, bytes = 0, cached = 0;
  bool is_truncated = false;
  client::ListOptions page_options{
      .prefix = prefix, .limit = 0, .token = "", .cached_only = o.is_cached_only};
  for (;;) {
    ASSIGN_OR_RETURN(client::ListPage page, c->list_page(address.bucket, page_options));
    for (auto& e : page.objects) {
      if (o.limit != 0 && count >= o.limit) {
        is_truncated = true;
        break;
      }
      if (!o.is_recursive) {
        const size_t slash = e.name.find('/', prefix.size());
        if (slash != std::string::npos) {
          directories.insert(e.name.substr(0, slash + 1));
          continue;
        }
      }
      ++count;
      bytes += e.size;
      cached += e.cached ? 1 : 0;
      if (!o.is_summary) objects.push_back(std::move(e));
    }
    if (is_truncated || page.next_token.empty() || page.next_token == page_options.token) break;
    page_options.token = std::move(page.next_token);
  }

  if (context.options.is_json) {
    std::string out = fmt::format(R"({{"bucket":{},"prefix":{},"objects":[)",
                                  json_string(address.bucket), json_string(prefix));
    for (size_t i = 0; i < objects.size(); ++i)
      out += (i == 0 ? "" : ",") + entry_json(objects[i], is_remote);
    out += R"(],"directories":[)";
    bool first = true;
    for (const auto& d : directories) {
      out += (first ? "" : ",") + json_string(d);
      first = false;
    }
    out += fmt::format(R"(],"summary":{{"objects":{},"bytes":{})", count, bytes);
    if (is_remote) out += fmt::format(R"(,"cached":{})", cached);
    out += fmt::format(R"(}},"truncated":{}}})", is_truncated ? "true" : "false");
    std::printf("%s\n", out.c_str());
    return Status::ok();
  }
  if (!o.is_summary) {
    std::vector<std::string> header = {"NAME", "SIZE"};
    if (is_remote) header.push_back("CACHED");
    if (o.is_long) {
      header.push_back("MODIFIED");
      header.push_back("ETAG");
    }
    Table table(header);
    for (const auto& d : directories) {
      std::vector<std::string> row = {d, "-"};
      row.resize(header.size(), "");
      table.add(row);
    }
    for (const auto& e : objects) {
      std::vector<std::string> row = {e.name,
                                      o.is_long ? std::to_string(e.size) : human_bytes(e.size)};
      if (is_remote) row.push_back(e.cached ? "yes" : "no");
      if (o.is_long) {
        row.push_back(human_time(e.mtime_unix_nanos));
        row.push_back(e.etag.empty() ? "-" : e.etag);
      }
      table.add(row);
    }
    if (table.rows() > 0) table.print();
    if (is_truncated) std::printf("(more objects follow: raise --limit)\n");
  }
  if (o.is_summary || o.is_long) {
    std::string line = fmt::format("{} objects, {} ({} bytes)", count, human_bytes(bytes), bytes);
    if (is_remote) line += fmt::format(", {} cached", cached);
    std::printf("%s\n", line.c_str());
  }
  return Status::ok();
}

}  // namespace

void add_bucket_commands(CLI::App& app, Context& context) {
  CLI::App* bucket =
      app.add_subcommand("bucket", "Create, list, remove buckets and show or set their properties");
  bucket->require_subcommand(1);

  auto create = std::make_shared<CreateOptions>();
  CLI::App* create_cmd = add_command(
      *bucket, "create", "Create a bucket, optionally with properties",
      "silo bucket create photos copies=2\n"
      "  silo bucket create cache backend.url=s3://origin backend.endpoint=http://minio:9000");
  create_cmd->add_option("bucket", create->bucket, "Bucket name")->required();
  create_cmd->add_option("props", create->props,
                         "Properties as KEY=VALUE (see 'silo bucket props set --help')");
  create_cmd->add_flag("--ignore-existing", create->is_existing_ok,
                       "Succeed when the bucket exists already");
  on_run(create_cmd, context, [&context, create] { return create_bucket(context, *create); });

  CLI::App* ls_cmd = add_command(*bucket, "ls", "List buckets with their layout and backend",
                                 "silo bucket ls --json");
  on_run(ls_cmd, context, [&context] { return list_buckets(context); });

  auto rm_names = std::make_shared<std::vector<std::string>>();
  CLI::App* rm_cmd = add_command(
      *bucket, "rm",
      "Remove buckets (a remote bucket: evict and forget it; the backend keeps its objects)",
      "silo bucket rm photos");
  rm_cmd->add_option("buckets", *rm_names, "Bucket names")->required();
  on_run(rm_cmd, context, [&context, rm_names] { return remove_buckets(context, *rm_names); });

  CLI::App* props = bucket->add_subcommand("props", "Show or set bucket properties");
  props->require_subcommand(1);
  auto show_bucket = std::make_shared<std::string>();
  CLI::App* show_cmd =
      add_command(*props, "show", "Show a bucket's properties", "silo bucket props show photos");
  show_cmd->add_option("bucket", *show_bucket, "Bucket name")->required();
  on_run(show_cmd, context, [&context, show_bucket]() -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    ASSIGN_OR_RETURN(const std::string name, bucket_of(*show_bucket));
    return show_props(context, *c, name);
  });

  auto set_bucket = std::make_shared<std::string>();
  auto set_pairs = std::make_shared<std::vector<std::string>>();
  CLI::App* set_cmd = add_command(
      *props, "set",
      "Set bucket properties as KEY=VALUE: copies=N, ec.data=K ec.parity=M [ec.min_size=SIZE], "
      "ec=none, "
      "durability=fsync|page_cache|default, write=sync|async, "
      "anonymous_read=BOOL, "
      "backend.url=s3://B|gs://B, backend.endpoint=URL, backend.region=R, backend.access_key=K, "
      "backend.secret_key=S, backend.revalidate=BOOL, backend=none",
      "silo bucket props set photos ec.data=4 ec.parity=2");
  set_cmd->add_option("bucket", *set_bucket, "Bucket name")->required();
  set_cmd->add_option("props", *set_pairs, "KEY=VALUE pairs")->required();
  on_run(set_cmd, context,
         [&context, set_bucket, set_pairs] { return set_props(context, *set_bucket, *set_pairs); });

  CLI::App* policy = bucket->add_subcommand(
      "policy", "Show, set or remove a bucket policy (S3's grammar: docs/security.md)");
  policy->require_subcommand(1);
  auto policy_bucket = std::make_shared<std::string>();
  auto policy_file = std::make_shared<std::string>();
  const auto policy_call = [&context, policy_bucket](http::Method method, std::string body) -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    ASSIGN_OR_RETURN(const std::string name, bucket_of(*policy_bucket));
    const std::string target = "/v1/buckets/" + name + "/policy";
    ASSIGN_OR_RETURN(const client::Response answer, c->request(method, target, std::move(body)));
    RETURN_IF_ERROR(client::Client::status_of(answer, fmt::format("the policy of bucket {}", name)));
    if (method == http::Method::kGet) std::printf("%s\n", answer.body.c_str());
    return Status::ok();
  };
  CLI::App* policy_show = add_command(*policy, "show", "Print a bucket's policy", "silo bucket policy show photos");
  policy_show->add_option("bucket", *policy_bucket, "Bucket name")->required();
  on_run(policy_show, context, [policy_call] { return policy_call(http::Method::kGet, ""); });
  CLI::App* policy_set = add_command(*policy, "set", "Set a bucket's policy from a JSON file ('-': stdin)",
                                     "silo bucket policy set photos readers.json");
  policy_set->add_option("bucket", *policy_bucket, "Bucket name")->required();
  policy_set->add_option("file", *policy_file, "The policy document")->required();
  on_run(policy_set, context, [policy_call, policy_file]() -> Status {
    ASSIGN_OR_RETURN(std::string text, read_text(*policy_file, "the policy"));
    return policy_call(http::Method::kPut, std::move(text));
  });
  CLI::App* policy_rm = add_command(*policy, "rm", "Remove a bucket's policy", "silo bucket policy rm photos");
  policy_rm->add_option("bucket", *policy_bucket, "Bucket name")->required();
  on_run(policy_rm, context, [policy_call] { return policy_call(http::Method::kDelete, ""); });

  auto ls = std::make_shared<ListOptions>();
  CLI::App* list_cmd =
      add_command(app, "ls", "List buckets, or the objects of a bucket under a prefix",
                  "silo ls photos/train/ --recursive --long\n  silo ls data/train-0001.tar --members");
  list_cmd->add_option("address", ls->address, "BUCKET[/PREFIX] (none: list buckets)");
  list_cmd->add_flag("--recursive,-r", ls->is_recursive,
                     "Every object under the prefix, not only the next level");
  list_cmd->add_flag("--long,-l", ls->is_long,
                     "Exact size, modification time and ETag, and a total");
  list_cmd->add_flag("--cached", ls->is_cached_only, "Remote buckets: only the objects Silo holds");
  list_cmd->add_flag("--summary,-s", ls->is_summary, "Only the count and total size");
  list_cmd->add_option("--limit,-n", ls->limit, "Show at most N objects");
  list_cmd->add_flag("--members,-m", ls->lists_members,
                     "BUCKET/NAME is an archive (a .tar shard): list its members (--long: exact sizes and offsets)");
  on_run(list_cmd, context, [&context, ls] { return list_objects(context, *ls); });
}

}  // namespace silo::cli
