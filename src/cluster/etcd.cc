#include "cluster/etcd.h"

namespace silo::cluster {
namespace {

constexpr size_t kMaxAnswer = 64 * 1024 * 1024;

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
  CO_ASSIGN_OR_RETURN(const std::string body,
                      co_await post("/v3/kv/range", wire::etcd_range_request(prefix, prefix_end(prefix))));
  co_return wire::parse_etcd_range(body, revision);
}

http::Awaitable<Result<EtcdTxnResult>> EtcdClient::txn(std::vector<EtcdCompare> compares, std::vector<EtcdPut> puts) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/kv/txn", wire::etcd_txn_request(compares, puts)));
  co_return wire::parse_etcd_txn(body);
}

http::Awaitable<Result<int64_t>> EtcdClient::grant_lease(int64_t ttl_seconds) {
  CO_ASSIGN_OR_RETURN(const std::string body,
                      co_await post("/v3/lease/grant", wire::etcd_lease_grant_request(ttl_seconds)));
  co_return wire::parse_etcd_lease_grant(body);
}

http::Awaitable<Status> EtcdClient::keep_alive(int64_t lease) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await post("/v3/lease/keepalive", wire::etcd_lease_request(lease)));
  CO_ASSIGN_OR_RETURN(const int64_t ttl, wire::parse_etcd_keepalive(body));
  // An expired lease comes back without a TTL.
  if (ttl <= 0) co_return Status::not_found("lease {:x} expired", lease);
  co_return Status::ok();
}

http::Awaitable<Status> EtcdClient::revoke(int64_t lease) {
  CO_RETURN_IF_ERROR((co_await post("/v3/lease/revoke", wire::etcd_lease_request(lease))).status());
  co_return Status::ok();
}

}  // namespace silo::cluster
