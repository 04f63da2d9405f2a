#include "store/detail/object_lister.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"

namespace silo::store::detail {
namespace {

// Parses into a reused message instead of wire::decode(), which returns a fresh one: the
// listing loop then allocates only the entry it returns. The checks are decode()'s.
bool parse_record(const rocksdb::Slice& value, wire::ObjectRecord& record) {
  return record.ParseFromArray(value.data(), static_cast<int>(value.size())) &&
         record.format_version() == wire::kFormat<wire::ObjectRecord>;
}

}  // namespace

Result<ListResult> list_objects(std::span<MetaDb* const> dbs, BucketId bucket,
                                const ListOptions& options) {
  const std::string range_prefix = bucket_key_prefix(bucket) + options.prefix;
  std::string lower = range_prefix;
  if (!options.start_after.empty()) {
    // start_after + '\0' is the smallest name after start_after.
    std::string after = object_key(bucket, options.start_after);
    after.push_back('\0');
    lower = std::max(lower, after);
  }
  const std::optional<std::string> upper = prefix_successor(range_prefix);
  ListResult result;
  if (upper && lower >= *upper) return result;

  rocksdb::ReadOptions read_options;
  rocksdb::Slice upper_slice;
  if (upper) {
    upper_slice = to_slice(*upper);
    read_options.iterate_upper_bound = &upper_slice;
  }
  std::vector<std::unique_ptr<rocksdb::Iterator>> iterators;
  iterators.reserve(dbs.size());
  for (MetaDb* db : dbs) {
    iterators.push_back(db->new_object_iterator(read_options));
    iterators.back()->Seek(to_slice(lower));
  }
  const rocksdb::Slice prefix_slice = to_slice(range_prefix);
  auto is_live = [&](size_t i) {
    return iterators[i]->Valid() && iterators[i]->key().starts_with(prefix_slice);
  };

  result.entries.reserve(std::min<size_t>(options.limit, 4096));
  wire::ObjectRecord best_record;
  wire::ObjectRecord other_record;
  std::vector<size_t> equal;  // iterators positioned on the current name
  for (;;) {
    std::optional<size_t> best;
    for (size_t i = 0; i < iterators.size(); ++i) {
      if (is_live(i) && (!best || iterators[i]->key().compare(iterators[*best]->key()) < 0)) {
        best = i;
      }
    }
    if (!best) break;
    if (result.entries.size() == options.limit) {
      result.is_truncated = true;
      break;
    }
    const rocksdb::Slice key = iterators[*best]->key();
    equal.clear();
    for (size_t i = 0; i < iterators.size(); ++i) {
      if (is_live(i) && iterators[i]->key() == key) equal.push_back(i);
    }
    bool has_record = false;
    for (size_t i : equal) {
      wire::ObjectRecord& target = has_record ? other_record : best_record;
      if (!parse_record(iterators[i]->value(), target)) {
        SILO_LOG_ERROR("skipping undecodable metadata of {}/{} in listing", bucket,
                       std::string_view(key.data() + 8, key.size() - 8));
        continue;
      }
      if (!has_record) {
        has_record = true;
      } else if (other_record.mtime_unix_nanos() > best_record.mtime_unix_nanos()) {
        best_record.Swap(&other_record);
      }
    }
    if (has_record) {
      wire::ListEntry& entry = result.entries.emplace_back();
      entry.set_name(key.data() + 8, key.size() - 8);
      // A slice of an erasure-coded object lists as the object.
      entry.set_size(best_record.has_ec() ? best_record.ec().object_size() : best_record.size());
      entry.set_mtime_unix_nanos(best_record.mtime_unix_nanos());
      // The S3 ETag: a multipart object's etag, else the MD5 of the bytes.
      // The ETag clients see (a cached object of a remote bucket: the backend's).
      const std::string& etag = !best_record.remote().etag().empty() ? best_record.remote().etag()
                                : best_record.etag().empty()          ? best_record.md5_hex()
                                                                      : best_record.etag();
      entry.set_md5_hex(etag);
    }
    // `key` points into iterators[*best]: it is dead once that iterator moves.
    for (size_t i : equal) iterators[i]->Next();
  }
  for (const auto& it : iterators) {
    RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate metadata"));
  }
  return result;
}

}  // namespace silo::store::detail
