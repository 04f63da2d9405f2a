// silo put, get, rm, cat, stat.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <thread>

#include "commands.h"
#include "base/text.h"
#include "placement/hrw.h"
#include "s3/encoded_words.h"
#include "wire/codec.h"
#include "progress.h"
#include "shard_packing.h"

namespace silo::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kDefaultWorkers = 8;

// One file to send or one object to fetch, and how it went.
struct Transfer {
  std::string local;  // path, or "-"
  std::string name;   // object name
  uint64_t size = 0;
  std::string etag;
  Status status;
};

// Prints the per-object results (JSON under --json) and returns the first failure,
// annotated with how many failed.
Status report_transfers(Context& context, std::string_view verb, const std::string& bucket,
                        const std::vector<Transfer>& transfers) {
  uint64_t bytes = 0;
  size_t failed = 0;
  const Transfer* first_failure = nullptr;
  for (const auto& t : transfers) {
    if (t.status.is_ok()) {
      bytes += t.size;
    } else {
      ++failed;
      if (first_failure == nullptr) first_failure = &t;
    }
  }
  if (context.options.is_json) {
    std::string objects, errors;
    for (const auto& t : transfers) {
      if (t.status.is_ok()) {
        objects += fmt::format(R"({}{{"name":{},"local":{},"size":{},"etag":{}}})",
                               objects.empty() ? "" : ",", json_string(t.name),
                               json_string(t.local), t.size, json_string(t.etag));
      } else {
        errors +=
            fmt::format(R"({}{{"name":{},"local":{},"error":{}}})", errors.empty() ? "" : ",",
                        json_string(t.name), json_string(t.local), json_string(t.status.message()));
      }
    }
    std::printf(
        "{\"bucket\":%s,\"objects\":[%s],\"errors\":[%s],\"summary\":{\"objects\":%zu,\"bytes\":%"
        "llu,"
        "\"failed\":%zu}}\n",
        json_string(bucket).c_str(), objects.c_str(), errors.c_str(), transfers.size() - failed,
        static_cast<unsigned long long>(bytes), failed);
  } else if (!context.options.is_quiet && transfers.size() > 1) {
    std::printf("%s %zu objects, %s%s\n", std::string(verb).c_str(), transfers.size() - failed,
                human_bytes(bytes).c_str(),
                failed > 0 ? fmt::format(", {} failed", failed).c_str() : "");
  }
  if (first_failure == nullptr) return Status::ok();
  Status s = first_failure->status;
  if (failed > 1) s.annotate("{} of {} failed; the first", failed, transfers.size());
  return s;
}

// ---- put ----

struct PutOptions {
  std::string source;
  std::string destination;
  int workers = kDefaultWorkers;
  // Files at least this large go up as multipart uploads, parts in parallel.
  uint64_t multipart_threshold_mib = 256;
  uint64_t part_size_mib = 16;
  int part_workers = 4;
  std::string shard_size;  // --shard-size: pack a directory into tar shards of about this size
};

// A large file as an S3 multipart upload: its parts read with pread and sent in parallel.
Status put_file_in_parts(client::Client& c, const std::string& bucket, Transfer& t, Progress& progress,
                         const PutOptions& o) {
  const int fd = ::open(t.local.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::not_found("{} cannot be opened for reading: {}", t.local, std::strerror(errno));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  const client::ReadAtFn read_at = [fd](uint64_t offset, std::span<char> out) -> Result<size_t> {
    const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0) return Status::unavailable("reading: {}", std::strerror(errno));
    return static_cast<size_t>(n);
  };
  auto put = c.put_multipart(bucket, t.name, t.size, o.part_size_mib << 20, o.part_workers, read_at,
                             [&progress](uint64_t bytes) { progress.add(0, bytes); });
  if (!put) return put.error();
  t.etag = put->etag;
  return Status::ok();
}

Status put_file(client::Client& c, const std::string& bucket, Transfer& t, Progress& progress,
                const PutOptions& o) {
  std::error_code ec;
  t.size = fs::file_size(t.local, ec);
  if (ec) return Status::not_found("{}: {}", t.local, ec.message());
  if (t.size > 0 && t.size >= (o.multipart_threshold_mib << 20)) return put_file_in_parts(c, bucket, t, progress, o);
  std::ifstream in(t.local, std::ios::binary);
  if (!in) return Status::not_found("{} cannot be opened for reading", t.local);
  const client::FillFn fill = [&in, &progress](std::span<char> buffer) -> size_t {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<size_t>(in.gcount());
    progress.add(0, n);
    return n;
  };
  // An empty body has nothing to stream.
  auto put = t.size == 0 ? c.put(bucket, t.name, "") : c.put_stream(bucket, t.name, t.size, fill);
  if (!put) return put.error();
  t.etag = put->etag;
  return Status::ok();
}

// The object name for `relative` (a file's path under the uploaded directory, or its
// file name) under destination name `name`: "dir/" and "dir" both make "dir/relative".
std::string joined_name(const std::string& name, const std::string& relative) {
  if (name.empty()) return relative;
  return name.back() == '/' ? name + relative : name + "/" + relative;
}

Status put_objects(Context& context, const PutOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const ObjectAddress to, parse_address(o.destination));
  if (o.source == "-") {
    if (to.name.empty() || to.name.back() == '/') {
      return Status::invalid_argument("reading stdin needs an object name: silo put - {}/NAME",
                                      to.bucket);
    }
    // Spooled to an unnamed temporary file, not to memory: stdin may be larger than RAM,
    // and the PUT needs its length up front.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> spool(std::tmpfile(), &std::fclose);
    if (!spool) {
      return Status::unavailable("cannot make a temporary file for stdin ({}): set TMPDIR to a "
                                 "directory with room",
                                 std::strerror(errno));
    }
    std::vector<char> chunk(1 << 20);
    uint64_t size = 0;
    while (std::cin) {
      std::cin.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const auto n = static_cast<size_t>(std::cin.gcount());
      if (n > 0 && std::fwrite(chunk.data(), 1, n, spool.get()) != n) {
        return Status::unavailable("spooling stdin to a temporary file: {}", std::strerror(errno));
      }
      size += n;
    }
    std::rewind(spool.get());
    Transfer t{.local = "-", .name = to.name, .size = size, .etag = "", .status = Status::ok()};
    const client::FillFn fill = [&spool](std::span<char> buffer) -> size_t {
      return std::fread(buffer.data(), 1, buffer.size(), spool.get());
    };
    auto put = size == 0 ? c->put(to.bucket, to.name, "") : c->put_stream(to.bucket, to.name, size, fill);
    if (put) {
      t.etag = put->etag;
    } else {
      t.status = put.error();
    }
    if (t.status.is_ok() && !context.options.is_json && !context.options.is_quiet) {
      std::printf("put - -> %s/%s (%s)\n", to.bucket.c_str(), to.name.c_str(),
                  human_bytes(t.size).c_str());
    }
    return report_transfers(context, "uploaded", to.bucket, {t});
  }

  if (!o.shard_size.empty()) {
    ASSIGN_OR_RETURN(const uint64_t shard_size, parse_size(o.shard_size));
    if (!fs::is_directory(o.source)) {
      return Status::invalid_argument("--shard-size packs a DIRECTORY into shards; {} is not one", o.source);
    }
    return put_shards(context, o.source, to.bucket, to.name, shard_size, o.workers);
  }
  RETURN_IF_ERROR(check_put_bucket(*c, to.bucket));
  std::error_code ec;
  const fs::file_status source_status = fs::status(o.source, ec);
  if (ec || !fs::exists(source_status)) {
    return Status::invalid_argument(
        "{} does not exist (put takes a FILE, a DIRECTORY or - for stdin)", o.source);
  }
  std::vector<Transfer> transfers;
  uint64_t total_bytes = 0;
  if (fs::is_directory(source_status)) {
    for (auto it = fs::recursive_directory_iterator(
             o.source, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      const std::string relative = fs::relative(it->path(), o.source).generic_string();
      transfers.push_back({.local = it->path().string(),
                           .name = joined_name(to.name, relative),
                           .size = 0,
                           .etag = "",
                           .status = Status::ok()});
      total_bytes += it->file_size();
    }
    if (ec) return Status::invalid_argument("walking {}: {}", o.source, ec.message());
    std::sort(transfers.begin(), transfers.end(),
              [](const Transfer& a, const Transfer& b) { return a.name < b.name; });
    if (transfers.empty()) return Status::invalid_argument("{} holds no files", o.source);
  } else {
    const std::string base = fs::path(o.source).filename().string();
    const std::string name = to.name.empty() || to.name.back() == '/' ? to.name + base : to.name;
    transfers.push_back(
        {.local = o.source, .name = name, .size = 0, .etag = "", .status = Status::ok()});
    total_bytes = fs::file_size(o.source, ec);
  }

  Progress progress("put", transfers.size(), total_bytes, context.shows_progress());
  const bool prints_lines = !context.options.is_json && !context.options.is_quiet;
  run_parallel(transfers.size(), o.workers, [&](size_t i) {
    Transfer& t = transfers[i];
    t.status = put_file(*c, to.bucket, t, progress, o);
    progress.add(1, 0);
    if (t.status.is_ok() && prints_lines && !context.shows_progress()) {
      progress.print_line(
          fmt::format("put {} -> {}/{} ({})", t.local, to.bucket, t.name, human_bytes(t.size)));
    }
  });
  progress.finish();
  return report_transfers(context, "uploaded", to.bucket, transfers);
}

// ---- get and cat ----

struct GetOptions {
  std::string source;
  std::string destination;
  std::optional<uint64_t> offset;
  std::optional<uint64_t> length;
  bool is_prefix = false;
  int workers = kDefaultWorkers;
  std::string archpath;  // cat: a member of an archive (or a pattern with archmode)
  std::string archmode;
};

Result<std::optional<client::ByteRange>> range_of(const GetOptions& o) {
  if (o.length && *o.length == 0) return Status::invalid_argument("--length must be at least 1");
  if (!o.offset && !o.length) return std::optional<client::ByteRange>();
  const uint64_t first = o.offset.value_or(0);
  if (!o.length) return std::optional<client::ByteRange>(client::ByteRange::from(first));
  return std::optional<client::ByteRange>(
      client::ByteRange::first_last(first, first + *o.length - 1));
}

// Streams one object into `path` through a temporary file renamed into place at the end.
Status get_to_file(client::Client& c, const std::string& bucket, Transfer& t,
                   const std::optional<client::ByteRange>& range, Progress& progress) {
  const fs::path path(t.local);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec)
    return Status::invalid_argument("cannot create directory {}: {}", path.parent_path().string(),
                                    ec.message());
  return write_whole_file(t.local, [&](const client::SinkFn& sink) -> Status {
    auto got = c.get_stream(
        bucket, t.name,
        [&sink, &t, &progress](std::span<const char> data) -> Status {
          RETURN_IF_ERROR(sink(data));
          t.size += data.size();
          progress.add(0, data.size());
          return Status::ok();
        },
        range);
    if (got) t.etag = got->etag;
    return got.status();
  });
}

Status write_to_stdout(client::Client& c, const std::string& bucket, const std::string& name,
                       const std::optional<client::ByteRange>& range) {
  auto got = c.get_stream(
      bucket, name,
      [](std::span<const char> data) -> Status {
        if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size())
          return Status::from_errno(errno, "stdout");
        return Status::ok();
      },
      range);
  std::fflush(stdout);
  return got.status();
}

// Whether an object name is safe to use as a relative path under a directory.
bool is_safe_relative(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, slash - start);
    if (part == ".." || part == ".") return false;
    start = slash + 1;
  }
  return true;
}

Status get_objects(Context& context, const GetOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const ObjectAddress from, parse_address(o.source));
  ASSIGN_OR_RETURN(const auto range, range_of(o));
  const bool is_many = o.is_prefix || from.name.empty() || from.name.back() == '/';
  if (!is_many) {
    if (o.destination == "-") return write_to_stdout(*c, from.bucket, from.name, range);
    const std::string base = fs::path(from.name).filename().string();
    std::string local = o.destination.empty() ? base : o.destination;
    std::error_code ec;
    if (!o.destination.empty() &&
        (fs::is_directory(o.destination, ec) || o.destination.back() == '/')) {
      local = (fs::path(o.destination) / base).string();
    }
    Transfer t{.local = local, .name = from.name, .size = 0, .etag = "", .status = Status::ok()};
    Progress progress("get", 1, 0, context.shows_progress());
    t.status = get_to_file(*c, from.bucket, t, range, progress);
    progress.finish();
    if (t.status.is_ok() && !context.options.is_json && !context.options.is_quiet) {
      std::printf("get %s/%s -> %s (%s)\n", from.bucket.c_str(), from.name.c_str(), t.local.c_str(),
                  human_bytes(t.size).c_str());
    }
    return report_transfers(context, "downloaded", from.bucket, {t});
  }
  if (range)
    return Status::invalid_argument("--offset/--length apply to one object, not to a prefix");
  if (o.destination == "-")
    return Status::invalid_argument("a prefix goes into a directory, not to stdout");
  const std::string dir = o.destination.empty() ? "." : o.destination;
  ASSIGN_OR_RETURN(const auto objects, c->list_all(from.bucket, from.name));
  // Names keep their path below the prefix's last '/': prefix "train/" puts
  // "train/a/1.tar" at DIR/a/1.tar.
  const size_t strip = from.name.rfind('/') == std::string::npos ? 0 : from.name.rfind('/') + 1;
  std::vector<Transfer> transfers;
  uint64_t total_bytes = 0;
  for (const auto& e : objects) {
    const std::string relative = e.name.substr(strip);
    if (!is_safe_relative(relative)) {
      return Status::invalid_argument(
          "object name '{}' is not a safe file path ('..', '.' or a leading '/'); "
          "get it by name into a file instead",
          e.name);
    }
    transfers.push_back({.local = (fs::path(dir) / relative).string(),
                         .name = e.name,
                         .size = 0,
                         .etag = "",
                         .status = Status::ok()});
    total_bytes += e.size;
  }
  if (transfers.empty()) {
    return Status::not_found("no objects in bucket {} under prefix '{}'", from.bucket, from.name);
  }
  Progress progress("get", transfers.size(), total_bytes, context.shows_progress());
  const bool prints_lines =
      !context.options.is_json && !context.options.is_quiet && !context.shows_progress();
  run_parallel(transfers.size(), o.workers, [&](size_t i) {
    Transfer& t = transfers[i];
    t.status = get_to_file(*c, from.bucket, t, std::nullopt, progress);
    progress.add(1, 0);
    if (t.status.is_ok() && prints_lines) {
      progress.print_line(
          fmt::format("get {}/{} -> {} ({})", from.bucket, t.name, t.local, human_bytes(t.size)));
    }
  });
  progress.finish();
  return report_transfers(context, "downloaded", from.bucket, transfers);
}

// ---- rm ----

struct RemoveOptions {
  std::vector<std::string> addresses;
  bool is_prefix = false;
};

Status remove_objects(Context& context, const RemoveOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  std::vector<std::pair<std::string, std::string>> targets;  // bucket, name
  for (const auto& text : o.addresses) {
    ASSIGN_OR_RETURN(const ObjectAddress a, parse_address(text));
    if (o.is_prefix) {
      ASSIGN_OR_RETURN(const auto objects, c->list_all(a.bucket, a.name));
      for (const auto& e : objects) targets.emplace_back(a.bucket, e.name);
    } else if (a.name.empty()) {
      return Status::invalid_argument(
          "'{}' names no object: write BUCKET/NAME, or add --prefix to remove every "
          "object under a prefix (silo bucket rm removes buckets)",
          text);
    } else {
      targets.emplace_back(a.bucket, a.name);
    }
  }
  std::vector<Transfer> results(targets.size());
  run_parallel(targets.size(), kDefaultWorkers, [&](size_t i) {
    results[i].name = targets[i].first + "/" + targets[i].second;
    results[i].status = c->remove(targets[i].first, targets[i].second);
  });
  size_t failed = 0;
  std::string removed_json, errors_json;
  const Status* first_failure = nullptr;
  for (const auto& r : results) {
    if (r.status.is_ok()) {
      removed_json += (removed_json.empty() ? "" : ",") + json_string(r.name);
      if (!context.options.is_json && !context.options.is_quiet)
        std::printf("removed %s\n", r.name.c_str());
    } else {
      ++failed;
      if (first_failure == nullptr) first_failure = &r.status;
      errors_json += fmt::format(R"({}{{"name":{},"error":{}}})", errors_json.empty() ? "" : ",",
                                 json_string(r.name), json_string(r.status.message()));
    }
  }
  if (context.options.is_json)
    std::printf("{\"removed\":[%s],\"errors\":[%s]}\n", removed_json.c_str(), errors_json.c_str());
  if (first_failure == nullptr) return Status::ok();
  Status s = *first_failure;
  if (failed > 1) s.annotate("{} of {} failed; the first", failed, results.size());
  return s;
}

// ---- stat ----

// Where an object's copies or slices live by HRW over the targets that own objects
// (docs/architecture.md): what the cluster places, not a check of each disk.
Result<std::vector<std::pair<std::string, std::string>>> holders_of(
    client::Client& c, const client::BucketInfo& bucket, const std::string& name, uint64_t size) {
  ASSIGN_OR_RETURN(const client::NodeMap map, c.node_map());
  std::vector<std::string> ids;
  for (const auto& n : map.nodes) {
    const bool stores = n.role == "target" || n.role == "all";
    const bool is_normal = n.mode.empty() || n.mode == "normal";
    if (stores && is_normal && n.state != "maintenance") ids.push_back(n.id);
  }
  if (ids.empty()) return std::vector<std::pair<std::string, std::string>>{};
  const placement::HrwCandidates candidates(ids);
  const auto& e = bucket.entry;
  const bool is_sliced = e.ec_data > 0 && size >= e.ec_min_size;
  const size_t count =
      e.ec_data > 0 ? (is_sliced ? e.ec_data + e.ec_parity : e.ec_parity + 1) : e.copies;
  std::vector<std::pair<std::string, std::string>> out;
  size_t rank = 0;
  for (const size_t i : candidates.ranking(ObjectRef{BucketId(e.id), name}, count)) {
    std::string what;
    if (!is_sliced) {
      what = rank == 0 ? "owner, full copy" : "full copy";
    } else {
      what = rank < e.ec_data ? fmt::format("data slice {}", rank + 1)
                              : fmt::format("parity slice {}", rank - e.ec_data + 1);
      if (rank == 0) what = "owner, " + what;
    }
    out.emplace_back(candidates.id(i), what);
    ++rank;
  }
  return out;
}

// What `node` holds of the object, asked of the node itself (its record, as rebalance and
// scrub ask): "full copy", "slice 2 of 4+2", "missing"; "not checked" when the keys may not
// read internal records (admins only) or the node does not answer.
std::string found_on(client::Client& c, const client::NodeMap& map, uint64_t bucket_id,
                     const std::string& name, const std::string& node_id) {
  const auto node = std::find_if(map.nodes.begin(), map.nodes.end(),
                                 [&](const client::NodeEntry& n) { return n.id == node_id; });
  if (node == map.nodes.end()) return "not checked (not in the node map)";
  const std::string target = fmt::format("{}/v1/internal/objects/{}/{}?meta=1", node->url, bucket_id,
                                         text::percent_encode_path(name));
  auto r = c.request(http::Method::kGet, target);
  if (!r) return "not checked (" + r.status().message() + ")";
  if (r->status == 404) return "missing";
  if (r->status == 403) return "not checked (admin keys needed)";
  if (r->status != 200) return fmt::format("not checked (HTTP {})", r->status);
  auto record = wire::decode<wire::ObjectRecord>(r->body, wire::Source::kNetwork);
  if (!record) return "not checked (" + record.status().message() + ")";
  if (record->has_ec()) {
    return fmt::format("slice {} of {}+{} ({})", record->ec().index() + 1, record->ec().data(), record->ec().parity(),
                       human_bytes(record->size()));
  }
  return fmt::format("full copy ({})", human_bytes(record->size()));
}

Status stat_object(Context& context, const std::string& text) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const ObjectAddress a, parse_address(text));
  if (a.name.empty())
    return Status::invalid_argument("'{}' names no object: write BUCKET/NAME", text);
  ASSIGN_OR_RETURN(const client::ObjectInfo info, c->head(a.bucket, a.name));
  ASSIGN_OR_RETURN(const client::BucketInfo bucket, c->bucket_info(a.bucket));
  ASSIGN_OR_RETURN(const auto holders, holders_of(*c, bucket, a.name, info.size));
  ASSIGN_OR_RETURN(const client::NodeMap map, c->node_map());
  std::vector<std::string> found;
  for (const auto& [node, what] : holders) found.push_back(found_on(*c, map, bucket.entry.id, a.name, node));
  std::vector<std::pair<std::string, std::string>> checksums, metadata;
  for (const auto& [key, value] : info.headers.fields()) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    // x-amz-checksum-type says what kind the checksums are (COMPOSITE for a multipart
    // object's "-N" value); metadata comes RFC 2047-encoded when it is not ASCII.
    if (lower.rfind("x-amz-checksum-", 0) == 0 && lower != "x-amz-checksum-type") {
      checksums.emplace_back(lower.substr(15), value);
    }
    if (lower.rfind("x-amz-meta-", 0) == 0) metadata.emplace_back(lower.substr(11), s3::decode_encoded_words(value));
  }
  const std::string modified(info.headers.get("Last-Modified").value_or(""));
  const std::string content_type(info.headers.get("Content-Type").value_or(""));
  if (context.options.is_json) {
    auto object_of = [](const std::vector<std::pair<std::string, std::string>>& pairs) {
      std::string out;
      for (const auto& [k, v] : pairs)
        out += (out.empty() ? "" : ",") + json_string(k) + ":" + json_string(v);
      return "{" + out + "}";
    };
    std::string holders_json;
    for (size_t i = 0; i < holders.size(); ++i) {
      holders_json += fmt::format(R"({}{{"node":{},"holds":{},"found":{}}})", holders_json.empty() ? "" : ",",
                                  json_string(holders[i].first), json_string(holders[i].second),
                                  json_string(found[i]));
    }
    std::printf(
        "{\"bucket\":%s,\"name\":%s,\"size\":%llu,\"etag\":%s,\"last_modified\":%s,\"content_"
        "type\":%s,"
        "\"checksums\":%s,\"metadata\":%s,\"holders\":[%s]}\n",
        json_string(a.bucket).c_str(), json_string(a.name).c_str(),
        static_cast<unsigned long long>(info.size), json_string(info.etag).c_str(),
        json_string(modified).c_str(), json_string(content_type).c_str(),
        object_of(checksums).c_str(), object_of(metadata).c_str(), holders_json.c_str());
    return Status::ok();
  }
  Table table({"PROPERTY", "VALUE"});
  table.add({"object", a.bucket + "/" + a.name});
  table.add({"size", fmt::format("{} ({})", info.size, human_bytes(info.size))});
  table.add({"etag", info.etag});
  table.add({"modified", modified});
  table.add({"content-type", content_type});
  for (const auto& [k, v] : checksums) table.add({"checksum " + k, v});
  for (const auto& [k, v] : metadata) table.add({"meta " + k, v});
  for (size_t i = 0; i < holders.size(); ++i) {
    table.add({"placed on " + holders[i].first, holders[i].second + "; found: " + found[i]});
  }
  table.print();
  return Status::ok();
}

}  // namespace

Status check_put_bucket(client::Client& c, std::string_view bucket) {
  // One clear answer for a wrong bucket, before any file is opened or streamed. A user may
  // be granted s3:PutObject without s3:ListBucket (which HEAD needs): then the PUTs decide.
  const Status s = c.head_bucket(bucket);
  return s.code() == Code::kPermissionDenied ? Status::ok() : s;
}

void add_object_commands(CLI::App& app, Context& context) {
  auto put = std::make_shared<PutOptions>();
  CLI::App* put_cmd =
      add_command(app, "put", "Upload a file, a directory (recursively, in parallel) or stdin (-)",
                  "silo put ./shards photos/train/    (./shards/a.tar -> photos/train/a.tar)\n"
                  "  silo put model.bin photos          (-> photos/model.bin)\n"
                  "  tar c dir | silo put - photos/dir.tar\n"
                  "  silo put ./samples data/train- --shard-size 256MiB   (-> data/train-000000.tar, ...)");
  put_cmd->add_option("source", put->source, "FILE, DIRECTORY or - (stdin)")->required();
  put_cmd->add_option("destination", put->destination, "BUCKET[/NAME] or BUCKET/PREFIX/")
      ->required();
  put_cmd->add_option("--workers,-w", put->workers, "Parallel uploads")->check(CLI::Range(1, 256));
  put_cmd
      ->add_option("--multipart-threshold-mib", put->multipart_threshold_mib,
                   "Files at least this large (MiB) go up as multipart uploads, parts in parallel")
      ->check(CLI::Range(5, 1 << 30));
  put_cmd->add_option("--part-size-mib", put->part_size_mib, "Part size of multipart uploads (MiB, >= 5)")
      ->check(CLI::Range(5, 5 * 1024));
  put_cmd
      ->add_option("--part-workers", put->part_workers,
                   "Parts of one file sent at once (memory: workers x part-workers x part size)")
      ->check(CLI::Range(1, 64));
  put_cmd->add_option("--shard-size", put->shard_size,
                      "Pack the DIRECTORY into tar shards of about this size (256MiB, 1GiB), each WebDataset "
                      "sample (files sharing a key: dir/KEY.ext) whole in one shard, keys in natural order; "
                      "named PREFIX000000.tar, ...");
  on_run(put_cmd, context, [&context, put] { return put_objects(context, *put); });

  auto get = std::make_shared<GetOptions>();
  CLI::App* get_cmd =
      add_command(app, "get",
                  "Download an object (or a byte range of it) to a file or stdout, or every "
                  "object under a prefix into a directory (in parallel)",
                  "silo get photos/train/a.tar ./a.tar\n"
                  "  silo get photos/train/ ./train     (every object under train/)\n"
                  "  silo get photos/big.bin - --offset 1024 --length 100 | xxd");
  get_cmd->add_option("source", get->source, "BUCKET/NAME, or BUCKET/PREFIX/ (or --prefix)")
      ->required();
  get_cmd->add_option("destination", get->destination,
                      "FILE, DIRECTORY or - (stdout); default: ./NAME");
  get_cmd->add_option("--offset", get->offset, "First byte of a range");
  get_cmd->add_option("--length", get->length, "Bytes of a range");
  get_cmd->add_flag("--prefix,-r,--recursive", get->is_prefix,
                    "The source is a prefix: get every object under it");
  get_cmd->add_option("--workers,-w", get->workers, "Parallel downloads")
      ->check(CLI::Range(1, 256));
  on_run(get_cmd, context, [&context, get] { return get_objects(context, *get); });

  auto cat = std::make_shared<GetOptions>();
  CLI::App* cat_cmd = add_command(app, "cat", "Write an object (or a byte range of it) to stdout",
                                  "silo cat photos/labels.txt --offset 0 --length 100\n"
                                  "  silo cat data/train-0001.tar --archpath 000042.jpg > 000042.jpg\n"
                                  "  silo cat data/train-0001.tar --archpath 000042 --archmode wdskey | tar -t");
  cat_cmd->add_option("object", cat->source, "BUCKET/NAME")->required();
  cat_cmd->add_option("--offset", cat->offset, "First byte of a range");
  cat_cmd->add_option("--length", cat->length, "Bytes of a range");
  cat_cmd->add_option("--archpath", cat->archpath,
                      "A member of the archive object (a .tar shard) instead of the object; a range applies "
                      "within it");
  cat_cmd->add_option("--archmode", cat->archmode,
                      "With --archpath as a pattern: a tar of the members it selects (wdskey: a WebDataset "
                      "sample by key; regexp, prefix, suffix, substr)");
  on_run(cat_cmd, context, [&context, cat]() -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    ASSIGN_OR_RETURN(const ObjectAddress a, parse_address(cat->source));
    if (a.name.empty())
      return Status::invalid_argument("'{}' names no object: write BUCKET/NAME", cat->source);
    ASSIGN_OR_RETURN(const auto range, range_of(*cat));
    if (!cat->archmode.empty() && cat->archpath.empty())
      return Status::invalid_argument("--archmode needs --archpath (the pattern)");
    if (cat->archpath.empty()) return write_to_stdout(*c, a.bucket, a.name, range);
    ASSIGN_OR_RETURN(const std::string bytes,
                     c->get_archive(a.bucket, a.name, {.path = cat->archpath, .mode = cat->archmode}, range));
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) return Status::from_errno(errno, "stdout");
    std::fflush(stdout);
    return Status::ok();
  });

  auto rm = std::make_shared<RemoveOptions>();
  CLI::App* rm_cmd =
      add_command(app, "rm", "Remove objects (or every object under a prefix with --prefix)",
                  "silo rm photos/a.tar photos/b.tar\n  silo rm photos/tmp/ --prefix");
  rm_cmd->add_option("objects", rm->addresses, "BUCKET/NAME ... (BUCKET/PREFIX with --prefix)")
      ->required();
  rm_cmd->add_flag("--prefix,-r,--recursive", rm->is_prefix,
                   "Remove every object under each prefix");
  on_run(rm_cmd, context, [&context, rm] { return remove_objects(context, *rm); });

  auto stat = std::make_shared<std::string>();
  CLI::App* stat_cmd =
      add_command(app, "stat",
                  "Show an object's size, ETag, checksums, metadata and the targets that hold "
                  "its copies or slices",
                  "silo stat photos/train/a.tar --json");
  stat_cmd->add_option("object", *stat, "BUCKET/NAME")->required();
  on_run(stat_cmd, context, [&context, stat] { return stat_object(context, *stat); });
}

}  // namespace silo::cli
