// libFuzzer target for the records Silo persists (tools/fuzz.sh builds and runs it with
// ASan and UBSan): an object record, a node map, a bucket map, an upload record, an
// archive index, a job list, as read back from RocksDB or a state file after a crash or
// a bad disk. Whatever the bytes, decoding with Source::kDisk either fails (kDataLoss) or
// yields a record that the code which reads it back renders without a crash: the JSON
// answers. (Member selection over an index is the archive module's: tar_index_fuzz.cc.)
// The first byte picks the record; the rest are its bytes. With SILO_RECORDS_SEEDS=DIR
// the target first writes one valid record of each kind there (tools/fuzz.sh's seeds).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "wire/bucket_json.h"
#include "wire/codec.h"
#include "wire/json.h"
#include "wire/node_map_json.h"
#include "wire/object_json.h"

namespace {

template <typename Message>
const Message* decoded(std::string_view bytes, Message& out) {
  auto r = silo::wire::decode<Message>(bytes, silo::wire::Source::kDisk);
  if (!r) {
    if (r.error().code() != silo::Code::kDataLoss) __builtin_trap();  // the disk's errors are DataLoss
    return nullptr;
  }
  out = std::move(*r);
  return &out;
}

void write_seed(const std::string& dir, const std::string& name, char kind, const std::string& bytes) {
  std::ofstream(dir + "/seed-" + name, std::ios::binary) << kind << bytes;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("SILO_RECORDS_SEEDS");
  if (dir == nullptr) return 0;
  namespace wire = silo::wire;
  wire::ObjectRecord object;
  object.set_name("shard-0001.tar");
  object.set_size(3 << 20);
  object.set_generation(42);
  object.set_etag("d41d8cd98f00b204e9800998ecf8427e");
  object.set_block_size(1 << 20);
  for (int i = 0; i < 3; ++i) object.add_block_xxh3(0x1234 + i);
  (*object.mutable_user_metadata())["k"] = "v";
  write_seed(dir, "object", 0, wire::encode(object));
  wire::NodeMap nodes;
  nodes.set_version(7);
  nodes.set_primary_id("p1");
  auto* node = nodes.add_nodes();
  node->set_id("t1");
  node->set_url("http://127.0.0.1:9001");
  write_seed(dir, "node-map", 1, wire::encode(nodes));
  wire::BucketMap buckets;
  buckets.set_version(3);
  auto* bucket = buckets.add_buckets();
  bucket->set_name("data");
  bucket->set_id(1);
  bucket->mutable_props()->set_copies(2);
  write_seed(dir, "bucket-map", 2, wire::encode(buckets));
  wire::UploadRecord upload;
  upload.set_name("big.bin");
  write_seed(dir, "upload", 3, wire::encode(upload));
  wire::ArchiveIndex index;
  for (const char* name : {"a/k1.jpg", "a/k1.cls", "b/k2.jpg"}) {
    auto* m = index.add_members();
    m->set_name(name);
    m->set_offset(512);
    m->set_size(100);
  }
  write_seed(dir, "archive-index", 4, wire::encode(index));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace wire = silo::wire;
  switch (data[0] % 5) {
    case 0: {
      wire::ObjectRecord record;
      if (decoded(bytes, record)) std::ignore = wire::object_put_json(record);
      break;
    }
    case 1: {
      wire::NodeMap map;
      if (decoded(bytes, map)) std::ignore = wire::node_map_json(map);
      break;
    }
    case 2: {
      wire::BucketMap map;
      if (decoded(bytes, map)) {
        std::ignore = wire::bucket_list_json(map);
        std::ignore = wire::users_json(map, "admin");
      }
      break;
    }
    case 3: {
      wire::UploadRecord record;
      std::ignore = decoded(bytes, record);
      break;
    }
    case 4: {
      wire::ArchiveIndex index;
      if (!decoded(bytes, index)) break;
      std::ignore = wire::archive_list_json(index);
      break;
    }
  }
  return 0;
}
