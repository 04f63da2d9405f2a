#pragma once

// etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/*): the request bodies
// the control plane sends and what it reads from the answers (cluster/etcd.h sends them).
// Keys and values travel base64-encoded; int64 fields come back as JSON strings.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct EtcdCompare {
  enum class Target { kCreateRevision, kModRevision, kValue };
  std::string key;
  Target target = Target::kModRevision;
  int64_t revision = 0;  // kCreateRevision, kModRevision (0: the key does not exist)
  std::string value;     // kValue
};

struct EtcdPut {
  std::string key;
  std::string value;
  int64_t lease = 0;  // 0: none
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
};

// Every key in [key, range_end); range_end empty: `key` alone.
std::string etcd_range_request(std::string_view key, std::string_view range_end);
// The keys of a range answer, and the store's revision.
Result<std::vector<EtcdKv>> parse_etcd_range(std::string_view body, int64_t* revision);
std::string etcd_txn_request(const std::vector<EtcdCompare>& compares, const std::vector<EtcdPut>& puts);
Result<EtcdTxnResult> parse_etcd_txn(std::string_view body);
std::string etcd_lease_grant_request(int64_t ttl_seconds);
// The granted lease's id.
Result<int64_t> parse_etcd_lease_grant(std::string_view body);
// {"ID": lease} for keepalive and revoke.
std::string etcd_lease_request(int64_t lease);
// The TTL left after a keepalive; 0 when the lease has expired.
Result<int64_t> parse_etcd_keepalive(std::string_view body);

}  // namespace silo::wire
