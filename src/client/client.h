#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "http/client.h"
#include "http/message.h"
#include "wire/bucket_json.h"
#include "wire/job_json.h"
#include "wire/mountpath_json.h"
#include "wire/node_map_json.h"
#include "wire/batch_json.h"
#include "wire/object_json.h"
#include "wire/settings_json.h"

namespace silo::client {

// One HTTP answer as it came: status, headers and the whole body.
struct Response {
  int status = 0;
  http::Headers headers;
  std::optional<uint64_t> content_length;
  std::string body;
};

// The native API's documents, as wire/ decodes them (one codec per document, shared with
// the servers that encode them).
using NodeEntry = wire::NodeEntry;
using NodeMap = wire::NodeMapAnswer;                 // GET /v1/cluster/map
using MembershipChange = wire::MembershipChange;     // what a membership change answers
using JobEntry = wire::JobEntry;                     // GET /v1/jobs/{id}
using BucketEntry = wire::BucketEntry;               // a bucket with every property
using ObjectEntry = wire::ObjectEntry;
using ListPage = wire::ObjectListPage;               // one page of a bucket listing
using PutResult = wire::PutResult;                   // the answer to an object PUT
using MountpathEntry = wire::MountpathEntry;         // one mountpath of a target
using MountpathWork = wire::MountpathWork;           // a target's last resilver or detach
using MountpathList = wire::MountpathList;           // GET /v1/mountpaths of a target
using Settings = wire::ClientSettings;               // the CLI's settings file

// What HEAD and get_stream() report about an object.
struct ObjectInfo {
  int status = 0;  // 200, or 206 for a range
  uint64_t size = 0;  // Content-Length of the answer
  std::string etag;   // without quotes
  http::Headers headers;
};

// A byte range of a GET, written as the Range header wants it.
struct ByteRange {
  std::string header;  // "bytes=0-99"
  static ByteRange first_last(uint64_t first, uint64_t last);  // bytes=first-last
  static ByteRange from(uint64_t first);                       // bytes=first-
  static ByteRange suffix(uint64_t length);                    // bytes=-length
};

// GET /v1/buckets/{bucket}/props: the bucket, and the answer's JSON as it came (for
// tools that print it).
struct BucketInfo {
  BucketEntry entry;
  std::string json;
};

// Which page of a bucket listing list_page() asks for.
struct ListOptions {
  std::string prefix;
  size_t limit = 0;  // 0: the server picks (1000)
  std::string token;
  bool cached_only = false;  // remote buckets: only what Silo holds (?cached=true)
};



struct ClientOptions {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds io_timeout{30000};
  size_t max_body_bytes = 1024ull * 1024 * 1024;  // request()/get() answers past this fail
  int max_redirects = 3;  // 307s followed by the object calls (never by request())
  // Every request is signed with SigV4 (UNSIGNED-PAYLOAD) with these keys. Defaults:
  // SILO_ACCESS_KEY / SILO_SECRET_KEY from the environment, else the cluster defaults.
  std::string access_key{};
  std::string secret_key{};
  std::string region = "us-east-1";
  // Object calls (put, get, head, remove, get_stream, put_stream) go straight to the
  // object's owner target, found by HRW from the node map (OwnerMap, refreshed every
  // 10 s), saving the proxy's hop; a call that reaches no target there goes through the
  // endpoint instead (not put_stream: its body is consumed). Off: everything goes to the
  // endpoint. The CLI's --direct.
  bool direct = false;
  // PEM CAs that https:// endpoints' certificates must chain to. Default: SILO_CA_BUNDLE
  // from the environment, else the system's trust store.
  std::string ca_bundle{};
  // Shown to servers that require client certificates (mutual TLS). Defaults:
  // SILO_CLIENT_CERT / SILO_CLIENT_KEY.
  std::string client_cert{};
  std::string client_key{};
};

class OwnerMap;

// The access and secret key a client uses: `options`' when set, else SILO_ACCESS_KEY /
// SILO_SECRET_KEY from the environment, else the cluster defaults; and the TLS files
// (ca_bundle, client_cert, client_key) from their variables when not set.
void fill_credentials(ClientOptions& options);
// An http::ClientOptions::decorate that signs every request with SigV4
// (UNSIGNED-PAYLOAD) for service "s3"; thread-safe. silo-bench signs with it too.
std::function<void(const http::Endpoint&, http::ClientRequest&)> sigv4_signer(const ClientOptions& options);

// Fills `buffer` with the next bytes of a streamed PUT and returns how many it wrote
// (0 ends the body early, which fails the PUT). Runs on the client's io thread.
using FillFn = std::function<size_t(std::span<char> buffer)>;
// Fills `out` with the bytes at `offset` of what is uploaded; how many (0: the end).
using ReadAtFn = std::function<Result<size_t>(uint64_t offset, std::span<char> out)>;
// Takes the next bytes of a streamed GET; a non-ok Status aborts the transfer.
using SinkFn = std::function<Status(std::span<const char> data)>;

// A blocking client of Silo's native API (CONTRACT.md "HTTP endpoints") for tests, the
// CLI and silo-bench. Owns an io_context run by its own thread(s) and an http::Client
// with a keep-alive pool. Every method blocks the caller until the answer is in, and
// may be called from several threads at once. Must not be destroyed while a call is in
// flight.
//
// Non-2xx answers become a Status: the code comes from the server's error JSON
// ({"error":{"code","message"}}) when there is one, otherwise from the HTTP status
// (404 kNotFound, 409 kAlreadyExists, 400 kInvalidArgument, 416 kOutOfRange,
// 503 kUnavailable, ...); the message names the request, the HTTP status and the
// server's message. Transport failures are kUnavailable or kDeadlineExceeded.
class Client {
 public:
  // `endpoint_url` is "http://host:port" of the node to talk to (normally a proxy).
  static Result<std::unique_ptr<Client>> create(std::string_view endpoint_url, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& endpoint_url() const { return endpoint_url_; }

  // One raw request; the answer whatever its status (only transport errors fail).
  // `target` is a percent-encoded path with query ("/v1/buckets?x=1") sent to the
  // endpoint, or an absolute "http://host:port/..." URL (e.g. a Location header).
  // Redirects are not followed.
  Result<Response> request(http::Method method, std::string_view target, std::string body = {},
                           http::Headers headers = {});

  Status health();
  Result<NodeMap> node_map();
  // Membership (admins): POST|DELETE /v1/cluster/nodes/{id}/maintenance,
  // POST /v1/cluster/nodes/{id}/decommission, DELETE /v1/cluster/nodes/{id}. Each answers
  // with the node map version of the change and the rebalance that moves the objects.
  Result<MembershipChange> set_maintenance(std::string_view node_id, bool on);
  Result<MembershipChange> decommission(std::string_view node_id);
  Result<MembershipChange> remove_node(std::string_view node_id);
  // POST /v1/cluster/nodes {"url"}: adds a node that waits to be added.
  Result<MembershipChange> add_node(std::string_view url);
  // Jobs: GET /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/wait (until the job is no
  // longer running or `timeout` passes; then the job as it is), POST /v1/jobs/{id}/abort.
  Result<std::vector<JobEntry>> jobs();
  // Configuration (admins): GET /v1/config (the node's effective config, secrets masked),
  // GET /v1/config?overrides=true (only the run-time overrides), and PUT /v1/config with
  // a JSON merge-patch of the cluster section (null resets a key to the config file's
  // value); that answers the new effective config. The answers are JSON text.
  Result<std::string> config(bool overrides_only = false);
  Result<std::string> set_config(std::string patch);
  Result<JobEntry> job(std::string_view id);
  Result<JobEntry> wait_job(std::string_view id, std::chrono::seconds timeout);
  // POST /v1/jobs (admins): e.g. {"kind": "scrub", "bucket": "b", "rate_mb_s": 100}.
  Result<JobEntry> start_job(std::string job_json);
  Status abort_job(std::string_view id);

  // PUT /v1/buckets/{bucket}; `props_json` is the optional properties body.
  Status create_bucket(std::string_view bucket, std::string props_json = {});
  Status delete_bucket(std::string_view bucket);
  // POST /v1/buckets/{bucket}/evict with `request_json` (wire::EvictRequest): how many
  // cached objects went.
  Result<uint64_t> evict(std::string_view bucket, std::string request_json = {});
  Status head_bucket(std::string_view bucket);
  Result<std::vector<BucketEntry>> list_buckets();
  Result<BucketEntry> bucket_props(std::string_view bucket);
  Status set_bucket_props(std::string_view bucket, std::string props_json);

  // Object calls follow up to max_redirects 307s (redirect mode) to the owner target.
  Result<PutResult> put(std::string_view bucket, std::string_view name, std::string_view bytes,
                        http::Headers headers = {});
  Result<std::string> get(std::string_view bucket, std::string_view name,
                          std::optional<ByteRange> range = std::nullopt);
  Result<ObjectInfo> head(std::string_view bucket, std::string_view name);
  Status remove(std::string_view bucket, std::string_view name);

  // One page of a bucket listing; limit 0 lets the server pick (1000).
  Result<ListPage> list(std::string_view bucket, std::string_view prefix = {}, size_t limit = 0,
                        std::string_view token = {});
  // Every page until next_token is empty.
  Result<std::vector<ObjectEntry>> list_all(std::string_view bucket, std::string_view prefix = {},
                                            size_t page_limit = 0);

  // Streams `size` bytes produced by `fill` (never held in memory all at once).
  // Follows no redirect: the body would have to be produced twice.
  Result<PutResult> put_stream(std::string_view bucket, std::string_view name, uint64_t size, const FillFn& fill,
                               http::Headers headers = {});
  // Uploads `size` bytes as an S3 multipart upload (the S3 API on the same endpoint and
  // keys): parts of `part_size` bytes (>= 5 MiB, S3's least), `workers` at a time, each
  // read whole with `read_at` (thread-safe, positional) and PUT; `on_bytes` hears of each
  // part sent. The upload is aborted when a part or the completion fails. The ETag is
  // S3's multipart one ("<md5 of the parts' md5s>-<parts>"). Memory: workers x part_size.
  Result<PutResult> put_multipart(std::string_view bucket, std::string_view name, uint64_t size, uint64_t part_size,
                                  int workers, const ReadAtFn& read_at,
                                  const std::function<void(uint64_t)>& on_bytes = {});
  // A read of an archive object's members (docs/shards.md): one member (`path`), with
  // `mode` (wdskey, regexp, prefix, suffix, substr) a tar of those `path` selects, or
  // with `lists` the member list as JSON. `range` applies within one member.
  struct ArchiveQuery {
    std::string path = {};
    std::string mode = {};
    bool lists = false;
  };
  Result<std::string> get_archive(std::string_view bucket, std::string_view name, const ArchiveQuery& query,
                                  std::optional<ByteRange> range = std::nullopt);
  // The members of an archive object (?archlist=true).
  Result<wire::ArchiveList> list_members(std::string_view bucket, std::string_view name);
  // Batch GET (POST /v1/batch, docs/shards.md "Batch GET"): the tar stream of `request`'s
  // entries into `sink` as it arrives; the bytes received. A stream the server cut (an
  // entry failed after the first byte) is an error, never a shorter archive.
  Result<uint64_t> get_batch(const wire::BatchRequest& request, const SinkFn& sink);
  // Streams the object (or a range of it) into `sink`; follows redirects.
  Result<ObjectInfo> get_stream(std::string_view bucket, std::string_view name, const SinkFn& sink,
                                std::optional<ByteRange> range = std::nullopt);

  // "/v1/objects/{bucket}/{percent-encoded name, slashes kept}"
  static std::string object_target(std::string_view bucket, std::string_view name);
  // "/v1/buckets/{bucket}?prefix=&limit=&token=" (empty or 0 parts left out), and the
  // parse of its answer; list() uses both, silo-bench sends them on its own connections.
  static std::string list_target(std::string_view bucket, std::string_view prefix, size_t limit,
                                 std::string_view token);
  static Result<ListPage> parse_list_page(std::string_view body);
  // The Status a non-2xx answer stands for (ok for 1xx-3xx); `what` names the request.
  static Status status_of(const Response& response, std::string_view what);

  // Additions for the CLI.
  // GET /v1/buckets/{bucket}/props, every property.
  Result<BucketInfo> bucket_info(std::string_view bucket);
  // One page of a bucket listing as `options` asks (list() with ?cached=true).
  Result<ListPage> list_page(std::string_view bucket, const ListOptions& options);
  // GET /v1/mountpaths of the target at `node_url` ("http://host:port", from the node map).
  Result<std::vector<MountpathEntry>> mountpaths(std::string_view node_url);
  // POST /v1/mountpaths/{id}/enable|disable on the target at `node_url` (admins); the
  // mountpath's new state (id and state; the answer holds nothing else).
  Result<MountpathEntry> enable_mountpath(std::string_view node_url, std::string_view id);
  Result<MountpathEntry> disable_mountpath(std::string_view node_url, std::string_view id);
  // POST /v1/mountpaths {"path"} on the target (admins): the attached mountpath.
  Result<MountpathEntry> attach_mountpath(std::string_view node_url, std::string_view path);
  // DELETE /v1/mountpaths/{id} on the target (admins): starts the detach, which
  // mountpath_work() then shows.
  Status detach_mountpath(std::string_view node_url, std::string_view id);
  // The target's current or last resilver or detach.
  Result<MountpathWork> mountpath_work(std::string_view node_url);
  // Both of the above from one GET.
  Result<MountpathList> mountpath_list(std::string_view node_url);

 private:
  Result<MountpathEntry> mountpath_call(std::string_view node_url, std::string_view id,
                                        std::string_view action);
  // A membership change, then the node map it led to.
  Result<MembershipChange> membership_call(http::Method method, std::string target, std::string body = {},
                                          http::Headers headers = {});
  Client(std::string endpoint_url, http::Endpoint endpoint, ClientOptions options);

  // Runs `make()` (returning Awaitable<Result<T>>) on the io thread and waits for it.
  template <typename T, typename MakeFn>
  Result<T> run(MakeFn make);
  // request() plus following 307s, with the body re-sent each time.
  Result<Response> request_following(http::Method method, std::string target, std::string_view body,
                                     const http::Headers& headers);
  Result<std::pair<http::Endpoint, std::string>> resolve(std::string_view target) const;
  // Where an object call goes: the owner's URL + object_target() with `direct` (when the
  // node map and the bucket's id can be had), else object_target().
  std::string object_url(std::string_view bucket, std::string_view name);
  // Forgets the node map and bucket ids (a direct call reached no target).
  void forget_routes();
  // A direct call that got no answer at all is sent again through the endpoint.
  Result<Response> request_object(http::Method method, std::string_view bucket, std::string_view name,
                                  std::string_view body, const http::Headers& headers,
                                  std::string_view query = {});

  const std::string endpoint_url_;
  const http::Endpoint endpoint_;
  const ClientOptions options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::shared_ptr<http::Client> http_;
  std::thread thread_;
  // Direct routing (options_.direct): the owner map and bucket ids, fetched on demand.
  Mutex routes_mutex_;
  std::shared_ptr<const OwnerMap> owners_ GUARDED_BY(routes_mutex_);
  std::chrono::steady_clock::time_point owners_at_ GUARDED_BY(routes_mutex_) = {};
  std::map<std::string, uint64_t, std::less<>> bucket_ids_ GUARDED_BY(routes_mutex_);
};

}  // namespace silo::client
