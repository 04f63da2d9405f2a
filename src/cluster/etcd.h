#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/client.h"
#include "wire/etcd_json.h"

namespace silo::cluster {

using wire::EtcdCompare;
using wire::EtcdKv;
using wire::EtcdPut;
using wire::EtcdTxnResult;

// A small client of etcd's v3 API through its JSON gateway: what the control plane needs,
// over the node's own HTTP client (bodies: wire/etcd_json.h). Endpoints are tried in
// order, starting with the last one that answered.
// Errors: kUnavailable when no endpoint answers, kInternal for answers it cannot read.
class EtcdClient {
 public:
  EtcdClient(std::shared_ptr<http::Client> http, std::vector<http::Endpoint> endpoints);

  // Every key that starts with `prefix`, and the store's revision.
  http::Awaitable<Result<std::vector<EtcdKv>>> get_prefix(const std::string& prefix, int64_t* revision = nullptr);
  // If every compare holds, applies every put; else nothing.
  http::Awaitable<Result<EtcdTxnResult>> txn(std::vector<EtcdCompare> compares, std::vector<EtcdPut> puts);
  // A new lease of `ttl_seconds`; its id.
  http::Awaitable<Result<int64_t>> grant_lease(int64_t ttl_seconds);
  // Renews the lease; kNotFound when it has expired.
  http::Awaitable<Status> keep_alive(int64_t lease);
  http::Awaitable<Status> revoke(int64_t lease);

 private:
  // POSTs `body` to `path` at the first endpoint that answers 200; the answer's body.
  http::Awaitable<Result<std::string>> post(const char* path, std::string body);

  std::shared_ptr<http::Client> http_;
  const std::vector<http::Endpoint> endpoints_;
  std::atomic<size_t> preferred_{0};
};

}  // namespace silo::cluster
