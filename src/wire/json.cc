#include "wire/json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "wire/detail/json_fields.h"
#include "wire/name_template.h"

namespace silo::wire {
namespace {

using nlohmann::json;

// Applies {"url", "endpoint", "region", "access_key", "secret_key", "revalidate"} onto
// `backend`: the keys named change, the others stay.
Status apply_backend_json(const json& value, BackendProps& backend) {
  if (!value.is_object()) {
    return Status::invalid_argument(
        "bucket property 'backend' must be {{\"url\": \"s3://bucket\"|\"gs://bucket\", \"endpoint\", \"region\", "
        "\"access_key\", \"secret_key\", \"revalidate\"}}");
  }
  for (const auto& [key, field] : value.items()) {
    if (key == "revalidate") {
      if (!field.is_boolean()) return Status::invalid_argument("bucket property 'backend.revalidate' must be true or false");
      backend.set_revalidate(field.get<bool>());
      continue;
    }
    if (!field.is_string()) return Status::invalid_argument("bucket property 'backend.{}' must be a string", key);
    const std::string text = field.get<std::string>();
    if (key == "url") {
      ASSIGN_OR_RETURN(const BackendProps parsed, parse_backend_url(text));
      backend.set_provider(parsed.provider());
      backend.set_bucket(parsed.bucket());
    } else if (key == "endpoint") {
      if (!text.empty() && !text.starts_with("http://") && !text.starts_with("https://")) {
        return Status::invalid_argument("bucket property 'backend.endpoint' must be an http:// or https:// URL, not '{}'",
                                        text);
      }
      backend.set_endpoint(text);
    } else if (key == "region") {
      backend.set_region(text);
    } else if (key == "access_key") {
      backend.set_access_key(text);
    } else if (key == "secret_key") {
      if (text != kMaskedSecret) backend.set_secret_key(text);  // the masked value shown keeps the secret
    } else {
      return Status::invalid_argument("unknown bucket property 'backend.{}'", key);
    }
  }
  if (backend.bucket().empty()) return Status::invalid_argument("bucket property 'backend' needs a 'url' (s3://bucket)");
  return Status::ok();
}

}  // namespace

Result<std::string> parse_string_field_json(std::string_view text, const char* key, std::string_view hint) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::invalid_argument("the body must be a JSON object");
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Status::invalid_argument("the body needs {}", hint);
  }
  return it->get<std::string>();
}

Result<std::string> parse_url_json(std::string_view text) {
  return parse_string_field_json(text, "url", "\"url\": \"http://host:port\" of the node to add");
}

namespace {

// Reads `key` into `selection` when it is one of its fields: whether it was.
Result<bool> read_selection_field(const std::string& key, const json& value, ObjectSelection& selection) {
  if (key == "prefix" && value.is_string()) {
    selection.prefix = value.get<std::string>();
  } else if (key == "template" && value.is_string()) {
    selection.name_template = value.get<std::string>();
    RETURN_IF_ERROR(NameTemplate::parse(selection.name_template).status());
  } else if (key == "names" && value.is_array() && std::all_of(value.begin(), value.end(), [](const json& n) {
               return n.is_string() && !n.get<std::string>().empty();
             })) {
    for (const auto& n : value) selection.names.push_back(n.get<std::string>());
  } else {
    return false;
  }
  return true;
}

Status check_one_selection(const json& doc) {
  const int given = (doc.contains("prefix") ? 1 : 0) + (doc.contains("template") ? 1 : 0) + (doc.contains("names") ? 1 : 0);
  if (given > 1) return Status::invalid_argument("give one of 'prefix', 'template' and 'names', not several");
  return Status::ok();
}

}  // namespace

Result<std::vector<std::string>> selected_names(const ObjectSelection& selection) {
  if (selection.name_template.empty()) return selection.names;
  ASSIGN_OR_RETURN(const NameTemplate parsed, NameTemplate::parse(selection.name_template));
  return parsed.expand();
}

Result<EvictRequest> parse_evict_request_json(std::string_view text) {
  EvictRequest out;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return out;
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::invalid_argument("the body must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    ASSIGN_OR_RETURN(const bool is_selection, read_selection_field(key, value, out.selection));
    if (is_selection) continue;
    if (key == "keep_props" && value.is_boolean()) {
      out.keep_props = value.get<bool>();
    } else {
      return Status::invalid_argument(
          "unknown or malformed evict field '{}' (prefix, template, names: [non-empty strings], keep_props)", key);
    }
  }
  RETURN_IF_ERROR(check_one_selection(doc));
  if (!out.keep_props && !out.selection.is_whole_bucket()) {
    return Status::invalid_argument("keep_props applies to evicting a whole bucket only");
  }
  return out;
}

std::string evict_request_json(const EvictRequest& request) {
  json doc{{"keep_props", request.keep_props}};
  const ObjectSelection& s = request.selection;
  if (!s.prefix.empty()) doc["prefix"] = s.prefix;
  if (!s.name_template.empty()) doc["template"] = s.name_template;
  if (!s.names.empty()) doc["names"] = s.names;
  return doc.dump();
}

Result<uint64_t> parse_evicted_json(std::string_view text) {
  constexpr std::string_view kDocument = "an evict answer";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  return detail::JsonFields(doc, kDocument).u64("evicted");
}

std::string evicted_json(uint64_t evicted, std::optional<bool> bucket_kept) {
  json doc{{"evicted", evicted}};
  if (bucket_kept) doc["bucket_kept"] = *bucket_kept;
  return doc.dump();
}

Result<JobRequest> parse_job_request_json(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::invalid_argument("the body must be a JSON object");
  JobRequest out;
  // A resharding job's spec is its runner's to read (wire/dsort_json.h).
  if (const auto kind = doc.find("kind"); kind != doc.end() && *kind == "dsort") {
    out.kind = "dsort";
    return out;
  }
  for (const auto& [key, value] : doc.items()) {
    ASSIGN_OR_RETURN(const bool is_selection, read_selection_field(key, value, out.selection));
    if (is_selection) continue;
    if (key == "kind" && value.is_string()) {
      out.kind = value.get<std::string>();
    } else if (key == "bucket" && value.is_string()) {
      out.bucket = value.get<std::string>();
    } else if (key == "rate_mb_s" && value.is_number() && value.get<double>() >= 0) {
      out.rate_bytes = static_cast<uint64_t>(value.get<double>() * 1024 * 1024);
    } else if (key == "workers" && value.is_number_unsigned() && value.get<uint64_t>() >= 1 &&
               value.get<uint64_t>() <= 1024) {
      out.workers = value.get<uint32_t>();
    } else {
      return Status::invalid_argument(
          "unknown or malformed job field '{}' (kind, bucket, rate_mb_s; prefetch: prefix, template, names: [non-empty "
          "strings], workers: 1..1024)",
          key);
    }
  }
  if (out.kind != "scrub" && out.kind != "prefetch" && out.kind != "rebalance") {
    return Status::invalid_argument("job kind '{}' cannot be started here; the kinds are: scrub, prefetch, rebalance, dsort",
                                    out.kind);
  }
  if (out.kind == "rebalance" && doc.size() != 1) {
    return Status::invalid_argument("a rebalance job takes no fields but 'kind': it moves every object");
  }
  if (out.kind == "prefetch") {
    if (out.bucket.empty()) return Status::invalid_argument("a prefetch job needs a 'bucket' (a remote bucket)");
    RETURN_IF_ERROR(check_one_selection(doc));
  }
  return out;
}

std::string json_string(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<BucketProps> apply_bucket_props_json(std::string_view text, BucketProps props) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return props;
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::invalid_argument("bucket properties must be a JSON object");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "durability") {
      const std::string v = value.is_string() ? value.get<std::string>() : "";
      if (v == "fsync") {
        props.set_durability(DURABILITY_FSYNC);
      } else if (v == "page_cache") {
        props.set_durability(DURABILITY_PAGE_CACHE);
      } else if (v == "default") {
        props.set_durability(DURABILITY_UNSPECIFIED);
      } else {
        return Status::invalid_argument(
            "bucket property 'durability' must be \"fsync\", \"page_cache\" or \"default\"");
      }
    } else if (key == "owner" || key == "has_policy") {
      // Read-only (GET answers them): a document read and sent back keeps working.
    } else if (key == "anonymous_read") {
      if (!value.is_boolean()) return Status::invalid_argument("bucket property 'anonymous_read' must be true or false");
      props.set_anonymous_read(value.get<bool>());
    } else if (key == "copies") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() < 1 || value.get<uint64_t>() > kMaxCopies) {
        return Status::invalid_argument("bucket property 'copies' must be an integer from 1 to {}", kMaxCopies);
      }
      props.set_copies(value.get<uint32_t>());
    } else if (key == "write") {
      const std::string v = value.is_string() ? value.get<std::string>() : "";
      if (v != "sync" && v != "async") {
        return Status::invalid_argument("bucket property 'write' must be \"sync\" or \"async\"");
      }
      props.set_write_mode(v == "async" ? WRITE_MODE_ASYNC : WRITE_MODE_SYNC);
    } else if (key == "ec") {
      if (value.is_null()) {
        props.clear_ec();
        continue;
      }
      // A reference, not the structured binding: clang 14 (the thread-safety check) cannot
      // capture bindings.
      const auto& ec = value;
      const auto field = [&ec](const char* name) -> std::optional<uint64_t> {
        const auto it = ec.find(name);
        if (it == ec.end() || !it->is_number_unsigned()) return std::nullopt;
        return it->get<uint64_t>();
      };
      const auto data = field("data"), parity = field("parity");
      const auto min_size = value.is_object() && value.contains("min_size") ? field("min_size") : std::optional<uint64_t>(0);
      const bool has_unknown_key =
          value.is_object() && std::any_of(value.items().begin(), value.items().end(), [](const auto& item) {
            return item.key() != "data" && item.key() != "parity" && item.key() != "min_size";
          });
      if (!value.is_object() || !data || !parity || !min_size || *data < 1 || *parity < 1 ||
          *data > kMaxEcSlices || *parity > kMaxEcSlices || *data + *parity > kMaxEcSlices || has_unknown_key) {
        return Status::invalid_argument(
            "bucket property 'ec' must be {{\"data\": k >= 1, \"parity\": m >= 1, \"min_size\": bytes}} with k + m <= {}, "
            "or null",
            kMaxEcSlices);
      }
      props.mutable_ec()->set_data(static_cast<uint32_t>(*data));
      props.mutable_ec()->set_parity(static_cast<uint32_t>(*parity));
      props.mutable_ec()->set_min_size(*min_size);
    } else if (key == "backend") {
      if (value.is_null()) {
        props.clear_backend();
        continue;
      }
      RETURN_IF_ERROR(apply_backend_json(value, *props.mutable_backend()));
    } else if (key == "verify_reads") {
      // Kept for the scripts that set it: every read is verified now, so only true is.
      if (!value.is_boolean()) return Status::invalid_argument("bucket property 'verify_reads' must be true or false");
      if (!value.get<bool>()) {
        return Status::invalid_argument(
            "bucket property 'verify_reads' cannot be false: every read checks the blocks it sends against their "
            "checksums, whatever the bucket (docs/data-protection.md \"Verified reads\")");
      }
      props.set_skip_read_verify(false);
    } else {
      return Status::invalid_argument("unknown bucket property '{}'", key);
    }
  }
  // One names the layout: `ec` alone replaces copies (copies 1), `copies` alone replaces ec.
  const bool names_ec = doc.contains("ec"), names_copies = doc.contains("copies");
  if (names_ec && !names_copies && is_erasure_coded(props)) props.set_copies(1);
  if (names_copies && !names_ec) props.clear_ec();
  if (is_erasure_coded(props) && copies_of(props) > 1) {
    return Status::invalid_argument("a bucket is either erasure coded ('ec') or has 'copies' > 1, not both");
  }
  return props;
}

Result<BackendProps> parse_backend_url(std::string_view url) {
  BackendProps backend;
  std::string_view rest;
  if (url.starts_with("s3://")) {
    backend.set_provider("s3");
    rest = url.substr(5);
  } else if (url.starts_with("gs://")) {
    backend.set_provider("gs");
    rest = url.substr(5);
  } else {
    return Status::invalid_argument("a backend is s3://bucket or gs://bucket, not '{}'", url);
  }
  while (rest.ends_with('/')) rest.remove_suffix(1);
  // S3's bucket naming rules: 3-63 characters of a-z, 0-9, '.', '-' (GCS allows '_').
  const bool is_valid = rest.size() >= 3 && rest.size() <= 63 &&
                        std::all_of(rest.begin(), rest.end(), [](char c) {
                          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
                        });
  if (!is_valid) return Status::invalid_argument("'{}' does not name a valid remote bucket", url);
  backend.set_bucket(std::string(rest));
  return backend;
}

std::string backend_url(const BackendProps& backend) { return backend.provider() + "://" + backend.bucket(); }

std::string users_json(const BucketMap& map, std::string_view admin_access_key) {
  json users = json::array();
  users.push_back({{"access_key", admin_access_key}, {"admin", true}, {"from", "config"}});
  for (const auto& u : map.users()) {
    users.push_back({{"access_key", u.access_key()}, {"admin", u.is_admin()}, {"from", "bucket map"}});
  }
  return json{{"users", users}}.dump();
}

Result<User> parse_user_json(std::string_view text, std::string access_key) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::invalid_argument("a user is a JSON object: {}", R"({"secret_key": "...", "admin": false})");
  }
  User user;
  user.set_access_key(std::move(access_key));
  for (const auto& [key, value] : doc.items()) {
    if (key == "secret_key" && value.is_string()) {
      user.set_secret_key(value.get<std::string>());
    } else if (key == "admin" && value.is_boolean()) {
      user.set_is_admin(value.get<bool>());
    } else {
      return Status::invalid_argument("user field '{}' is unknown or has the wrong type (secret_key: string, admin: bool)",
                                      key);
    }
  }
  if (user.secret_key().size() < 8 || user.secret_key().size() > 128) {
    return Status::invalid_argument("secret_key must be 8..128 characters");
  }
  return user;
}

std::string error_json(const Status& status) {
  json error{{"code", code_name(status.code())}, {"message", status.message()}};
  if (!status.reason().empty()) error["reason"] = status.reason();
  return json{{"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::optional<Code> code_of_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(Code::kUnauthenticated); ++i) {
    if (code_name(static_cast<Code>(i)) == name) return static_cast<Code>(i);
  }
  return std::nullopt;
}

}  // namespace

Result<ErrorAnswer> parse_error_json(std::string_view text) {
  constexpr std::string_view kDocument = "an error answer";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  ASSIGN_OR_RETURN(const detail::JsonFields error, detail::JsonFields(doc, kDocument).object("error"));
  ErrorAnswer out;
  ASSIGN_OR_RETURN(const std::string code, error.string_or("code", ""));
  out.code = code_of_name(code);
  ASSIGN_OR_RETURN(out.message, error.string_or("message", ""));
  ASSIGN_OR_RETURN(out.reason, error.string_or("reason", ""));
  return out;
}

Result<ClientSettings> parse_client_settings_json(std::string_view text) {
  constexpr std::string_view kDocument = "the settings";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  ClientSettings settings;
  ASSIGN_OR_RETURN(settings.endpoint, fields.string_or("endpoint", ""));
  ASSIGN_OR_RETURN(settings.access_key, fields.string_or("access_key", ""));
  ASSIGN_OR_RETURN(settings.secret_key, fields.string_or("secret_key", ""));
  return settings;
}

namespace {

// The string as the CLI has always printed it: only '"', '\\' and control bytes escaped
// (as \u00XX); UTF-8 kept as it is.
void append_compact_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Compact JSON with object members in key order (nlohmann's own order).
void append_compact(std::string& out, const json& value) {
  if (value.is_string()) {
    append_compact_string(out, value.get_ref<const std::string&>());
  } else if (value.is_array()) {
    out += '[';
    for (const json& item : value) {
      if (out.back() != '[') out += ',';
      append_compact(out, item);
    }
    out += ']';
  } else if (value.is_object()) {
    out += '{';
    for (const auto& [key, member] : value.items()) {
      if (out.back() != '{') out += ',';
      append_compact_string(out, key);
      out += ':';
      append_compact(out, member);
    }
    out += '}';
  } else {
    out += value.dump();  // null, true, false, a number
  }
}

}  // namespace

Result<std::string> json_value_at(std::string_view json_text, std::string_view dotted_path) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::invalid_argument("not valid JSON");
  const json* at = &doc;
  while (!dotted_path.empty()) {
    const size_t dot = dotted_path.find('.');
    if (!at->is_object()) return std::string();
    const auto it = at->find(std::string(dotted_path.substr(0, dot)));
    if (it == at->end()) return std::string();
    at = &*it;
    dotted_path = dot == std::string_view::npos ? std::string_view() : dotted_path.substr(dot + 1);
  }
  if (at->is_null()) return std::string();
  std::string out;
  append_compact(out, *at);
  return out;
}

bool is_json(std::string_view text) { return json::accept(text); }

}  // namespace silo::wire
