#include "store/detail/upload_lister.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "store/detail/store_impl.h"

namespace silo::store::detail {
namespace {

// Moves `it` forward to the next upload record below `prefix`, jumping over part records.
void skip_parts(rocksdb::Iterator& it, const rocksdb::Slice& prefix) {
  while (it.Valid() && it.key().starts_with(prefix)) {
    const std::optional<UploadKey> key = parse_upload_key(it.key());
    if (!key) {
      SILO_LOG_ERROR("skipping an uploads key this build does not know");
      it.Next();
      continue;
    }
    if (!key->part_number) return;
    // Part keys are the upload key plus 4 bytes whose first is never 0xff.
    it.Seek(upload_key(key->bucket, key->name, key->upload_id) + '\xff');
  }
}

}  // namespace

Result<UploadList> list_uploads(std::span<MetaDb* const> dbs, BucketId bucket,
                                const UploadListOptions& options) {
  const std::string range_prefix = upload_name_prefix(bucket, options.prefix);
  std::string lower = range_prefix;
  if (!options.key_marker.empty()) {
    // Past every upload of key_marker, or past the marker upload (and its parts) only.
    std::string after = upload_name_key(bucket, options.key_marker);
    after += options.upload_id_marker.empty() ? std::string("\xff")
                                              : options.upload_id_marker + '\xff';
    lower = std::max(lower, after);
  }
  const std::optional<std::string> upper = prefix_successor(range_prefix);
  UploadList result;
  if (options.limit == 0 || (upper && lower >= *upper)) return result;

  rocksdb::ReadOptions read_options;
  rocksdb::Slice upper_slice;
  if (upper) {
    upper_slice = to_slice(*upper);
    read_options.iterate_upper_bound = &upper_slice;
  }
  const rocksdb::Slice prefix_slice = to_slice(range_prefix);
  std::vector<std::unique_ptr<rocksdb::Iterator>> iterators;
  for (MetaDb* db : dbs) {
    iterators.push_back(db->new_upload_iterator(read_options));
    iterators.back()->Seek(to_slice(lower));
    skip_parts(*iterators.back(), prefix_slice);
  }
  auto is_live = [&](size_t i) {
    return iterators[i]->Valid() && iterators[i]->key().starts_with(prefix_slice);
  };
  for (;;) {
    std::optional<size_t> best;
    for (size_t i = 0; i < iterators.size(); ++i) {
      if (is_live(i) && (!best || iterators[i]->key().compare(iterators[*best]->key()) < 0)) {
        best = i;
      }
    }
    if (!best) break;
    if (result.uploads.size() == options.limit) {
      result.is_truncated = true;
      break;
    }
    rocksdb::Iterator& it = *iterators[*best];
    Result<wire::UploadRecord> record = wire::decode<wire::UploadRecord>(
        std::string_view(it.value().data(), it.value().size()), wire::Source::kDisk);
    if (record) {
      result.uploads.push_back(upload_info_of(*record));
    } else {
      SILO_LOG_ERROR("skipping undecodable upload record in bucket {}: {}", bucket,
                     record.error());
    }
    it.Next();
    skip_parts(it, prefix_slice);
  }
  for (const auto& it : iterators) {
    RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate uploads"));
  }
  return result;
}

}  // namespace silo::store::detail
