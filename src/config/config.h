#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::config {

enum class Role { kProxy, kTarget, kAll };
enum class Durability { kFsync, kPageCache };
// How a proxy serves object data: stream it between client and owner target (default:
// works with every stock S3 client), or answer 307 with the owner's URL (opt-in).
enum class ProxyMode { kStream, kRedirect };

std::string_view role_name(Role role);
bool is_proxy(Role role);
bool is_target(Role role);

struct HttpLimits {
  uint64_t max_header_bytes = 16 * 1024;
  uint64_t max_connections = 4096;
  // Client requests served at once per node; beyond, 503 SlowDown. Requests between nodes
  // are not counted (the node where a request enters the cluster counts it).
  uint64_t max_requests_in_flight = 1024;
  std::chrono::seconds idle_timeout{60};
  std::chrono::seconds header_timeout{30};
  std::chrono::seconds body_idle_timeout{60};
  std::chrono::seconds drain_timeout{20};
};

// Who may use the cluster. Every node checks every request itself (SigV4 for clients, the
// cluster secret for intra-cluster calls), so no node can be used to bypass another's checks.
struct AuthConfig {
  // The admin user; silod takes SILO_ACCESS_KEY / SILO_SECRET_KEY from the environment
  // when they are set. More users are added through the native API (bucket map).
  std::string admin_access_key = "silo-admin";
  std::string admin_secret_key = "silo-secret-key";
  // Signs intra-cluster requests. Empty: derived from the admin secret, so the nodes of a
  // cluster agree without one more setting (set it to rotate the admin key independently).
  std::string cluster_secret;
};

// The S3 surface.
struct S3Config {
  // Virtual-host style: a Host of "<bucket>.<domain>[:port]" names the bucket.
  std::vector<std::string> domains = {"localhost"};
  std::string region = "us-east-1";  // GetBucketLocation's answer; any signed region is accepted
  // Multipart uploads not completed or aborted within this time are removed.
  std::chrono::hours multipart_upload_ttl{7 * 24};
  uint64_t min_part_size = 5 * 1024 * 1024;  // EntityTooSmall below this (all parts but the last)
  uint64_t max_object_size = 5ULL * 1024 * 1024 * 1024 * 1024;  // EntityTooLarge past this
};

// Where the primary keeps the node map and bucket map (DESIGN.md "Control plane").
struct MetaStoreConfig {
  enum class Kind { kLocal, kEtcd };
  // kLocal: the first proxy is the primary and keeps the maps in its state directory.
  // kEtcd: proxies campaign for primary through an etcd lease; the maps live in etcd.
  Kind kind = Kind::kLocal;
  std::vector<std::string> etcd_endpoints;  // "http://host:port" of etcd's client URLs
  std::string etcd_prefix = "/silo";        // keys: <prefix>/primary, <prefix>/maps/{node,bucket}
  // The primary's lease: a primary cut off from etcd stops acting as one within this
  // time, and another takes over within about this time after the lease ends.
  std::chrono::seconds primary_lease{3};
};

// A remote store's defaults: what a remote bucket uses where its own backend props are
// empty (docs/remote-buckets.md).
struct BackendDefaults {
  std::string endpoint;  // empty: the provider's public endpoint
  std::string region;
  std::string access_key;
  std::string secret_key;  // never logged
};

// Remote buckets and the space they may use (DESIGN.md "Backends").
struct CacheConfig {
  BackendDefaults s3;
  BackendDefaults gs;
  // "s3" or "gs": a request naming a bucket Silo does not have looks for it there (with
  // the defaults above) and, when it exists, makes it a remote bucket on first access;
  // "" (default): unknown buckets are NoSuchBucket.
  std::string first_access;
  // Percent of each mountpath's capacity in use: past `high_wm` cached objects of remote
  // buckets are evicted, least recently used first, down to `low_wm`; past `oos_wm` new
  // objects are refused (507 InsufficientStorage).
  uint32_t low_wm = 75;
  uint32_t high_wm = 90;
  uint32_t oos_wm = 95;
  std::chrono::milliseconds space_check_interval{1000};
  uint32_t prefetch_workers = 16;  // objects fetched at once per target by a prefetch job
  // Objects at least this large are fetched with parallel range GETs of this size.
  uint64_t range_get_size = 16ull << 20;
  uint32_t range_get_streams = 4;  // per object
};

// Settings every node of a cluster shares. The primary's copy is the cluster's.
struct ClusterConfig {
  std::chrono::milliseconds keepalive_interval{1000};
  // A node not heard from for this long is marked down in the node map.
  std::chrono::milliseconds keepalive_timeout{5000};
  // A rebalance walk gives up on objects that keep failing for a reason other than a
  // target that is down only after this long (and 5 passes): longer than a coded
  // object's staged commit can look short of slices (its 60 s deadline, docs/adr/0014).
  std::chrono::seconds rebalance_give_up{180};
  Durability durability = Durability::kFsync;
  ProxyMode proxy_mode = ProxyMode::kStream;
  HttpLimits http;
  AuthConfig auth;
  S3Config s3;
  MetaStoreConfig meta_store;
  CacheConfig cache;
};

// HTTPS on the node's port (docs/security.md "TLS"). PEM files, read again on SIGHUP.
struct TlsConfig {
  std::string cert_file;  // with key_file: the port serves HTTPS only
  std::string key_file;
  // The CAs this node trusts when it calls other nodes (and checks client certificates
  // against); empty: the system's.
  std::string ca_file;
  bool require_client_cert = false;  // mutual TLS: every client shows a certificate ca_file signed
  bool is_enabled() const { return !cert_file.empty(); }
};

// Settings of one node.
struct NodeConfig {
  std::string id;  // stable across restarts; default: the hostname-port
  Role role = Role::kAll;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;     // 0: the kernel picks (reported in the ready file)
  std::string public_url;   // default http://host:port (https:// with TLS)
  std::string data_dir;     // node state: persisted maps; default mountpath for targets
  std::vector<std::string> mountpaths;  // targets; default {data_dir/mp0}
  // The primary to join (any proxy will do). Empty on the primary; on an HA proxy; and
  // on a target an admin adds later (POST /v1/cluster/nodes), which remembers it then.
  std::string primary_url;
  std::string log_level = "info";
  std::string ready_file;   // written with {"port","pid"} once the node serves
  uint32_t io_threads = 0;  // network threads; 0: one per usable CPU (base/cpus.h)
  // Blocking file work per mountpath: enough for the disk to have many fsyncs in flight
  // (small durable PUTs: 4 threads gave a third of what 16 do, bench/small_put.sh).
  uint32_t disk_threads_per_mountpath = 16;
  // Files of hot objects a target keeps open with their records (a warm GET then needs no
  // metadata lookup and no open, docs/adr/0025); 0 keeps none. At most half the open-file
  // limit (RLIMIT_NOFILE, raised to its hard limit at start).
  uint32_t open_files = 16384;
  TlsConfig tls;
};

struct Config {
  NodeConfig node;
  ClusterConfig cluster;
};

// Parses a config document:
//   {"node": {...NodeConfig fields...}, "cluster": {...ClusterConfig fields...}}
// Durations are given in the field's unit as named (keepalive_interval_ms, idle_timeout_s).
// Unknown keys, wrong types and out-of-range values are kInvalidArgument naming the key.
Result<Config> parse(std::string_view json_text);
// The config as the JSON parse() reads (every key, defaults included), with every secret
// shown as "********": what `GET /v1/config` answers.
std::string to_json(const Config& config);
Result<Config> load(const std::string& path);

// Fills defaults that depend on other fields (public_url, mountpaths) and checks the
// whole config (the cluster section with check_cluster()). Errors name the field and
// what would be valid.
Status finalize(Config& config);
// The checks of the cluster section alone: cross-field rules (low_wm < high_wm), ranges.
Status check_cluster(const ClusterConfig& cluster);

// Run-time overrides of the cluster section (docs/configuration.md "Changing settings at
// run time"): a JSON object shaped like the config file's "cluster" section but partial,
// e.g. {"cache":{"high_wm":85}}, kept in the bucket map. Only some keys may be set so
// (is_runtime_settable); the others are read once at start.

// Whether the dotted key of the cluster section ("cache.high_wm", "proxy_mode") may be
// changed at run time: every reader of it reads the live value.
bool is_runtime_settable(std::string_view key);
// Applies `overrides_json` ("" or an object: no change) on `cluster`, then checks the
// result with check_cluster(). On error `cluster` is left as it was. Errors
// (kInvalidArgument) name the key: unknown, read at start only, wrong type, bad range.
Status apply_overrides(ClusterConfig& cluster, std::string_view overrides_json);
// Merges `patch_json` (an object) into the overrides `current_json` ("" or an object)
// with JSON merge-patch semantics (RFC 7396): a value replaces, null removes the override
// (the key falls back to the config file's value). A secret given as "********" (the mask
// GET /v1/config shows) keeps its value. Refuses unknown keys and keys not settable at
// run time, naming them. Returns the new overrides: "" when none are left. Values are
// checked by apply_overrides(), not here.
Result<std::string> merge_overrides(std::string_view current_json, std::string_view patch_json);
// The overrides as a JSON object ("{}" when none), secrets shown as "********".
std::string mask_overrides(std::string_view overrides_json);

}  // namespace silo::config
