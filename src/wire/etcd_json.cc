#include "wire/etcd_json.h"

#include <nlohmann/json.hpp>

#include <charconv>

#include "base/base64.h"

namespace silo::wire {
namespace {

using json = nlohmann::json;

// The gateway writes int64 as JSON strings (and leaves out zero values).
int64_t int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string text = it->get<std::string>();
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
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

Result<json> parse(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::internal("etcd answered something that is not JSON");
  return j;
}

const json& member(const json& j, const char* key) {
  static const json empty = json::object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

}  // namespace

std::string etcd_range_request(std::string_view key, std::string_view range_end) {
  json request = {{"key", b64(key)}};
  if (!range_end.empty()) request["range_end"] = b64(range_end);
  return request.dump();
}

Result<std::vector<EtcdKv>> parse_etcd_range(std::string_view body, int64_t* revision) {
  ASSIGN_OR_RETURN(const json answer, parse(body));
  if (revision != nullptr) *revision = int_of(member(answer, "header"), "revision");
  std::vector<EtcdKv> out;
  const auto it = answer.find("kvs");
  if (it == answer.end() || !it->is_array()) return out;
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

std::string etcd_txn_request(const std::vector<EtcdCompare>& compares, const std::vector<EtcdPut>& puts) {
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
  return request.dump();
}

Result<EtcdTxnResult> parse_etcd_txn(std::string_view body) {
  ASSIGN_OR_RETURN(const json answer, parse(body));
  EtcdTxnResult result;
  const auto it = answer.find("succeeded");
  result.succeeded = it != answer.end() && it->is_boolean() && it->get<bool>();
  result.revision = int_of(member(answer, "header"), "revision");
  return result;
}

std::string etcd_lease_grant_request(int64_t ttl_seconds) { return json{{"TTL", ttl_seconds}}.dump(); }

Result<int64_t> parse_etcd_lease_grant(std::string_view body) {
  ASSIGN_OR_RETURN(const json answer, parse(body));
  const int64_t id = int_of(answer, "ID");
  if (id == 0) return Status::internal("etcd granted no lease: {}", body.substr(0, 200));
  return id;
}

std::string etcd_lease_request(int64_t lease) { return json{{"ID", std::to_string(lease)}}.dump(); }

Result<int64_t> parse_etcd_keepalive(std::string_view body) {
  ASSIGN_OR_RETURN(const json answer, parse(body));
  return int_of(member(answer, "result"), "TTL");
}

}  // namespace silo::wire
