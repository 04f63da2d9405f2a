#pragma once

// Helpers shared by the store's unit tests (header only; not part of silo_store).
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/detail/meta_db.h"
#include "store/store.h"

namespace silo::store::testing {

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "silo-store-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs one awaitable to completion on a private io_context.
template <typename T>
T run(Awaitable<T> awaitable) {
  boost::asio::io_context io;
  std::optional<T> out;
  boost::asio::co_spawn(
      io, [&]() -> Awaitable<void> { out.emplace(co_await std::move(awaitable)); },
      boost::asio::detached);
  io.run();
  return std::move(*out);
}

inline void run(Awaitable<void> awaitable) {
  boost::asio::io_context io;
  boost::asio::co_spawn(io, std::move(awaitable), boost::asio::detached);
  io.run();
}

inline Awaitable<Result<wire::ObjectRecord>> put_object(Store& store, ObjectRef object,
                                                        std::string data, PutOptions options) {
  CO_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer,
                      co_await store.create(object, std::move(options)));
  // Two writes, so the streaming hashes see more than one chunk.
  const size_t half = data.size() / 2;
  CO_RETURN_IF_ERROR(co_await writer->write(std::span<const char>(data.data(), half)));
  CO_RETURN_IF_ERROR(
      co_await writer->write(std::span<const char>(data.data() + half, data.size() - half)));
  co_return co_await writer->commit();
}

inline PutOptions fast() {
  PutOptions options;
  options.durability = Durability::kPageCache;  // fsync adds milliseconds per object
  return options;
}

inline Result<wire::ObjectRecord> put(Store& store, const ObjectRef& object,
                                      const std::string& data, PutOptions options = fast()) {
  return run(put_object(store, object, data, std::move(options)));
}

// Puts name -> data for every pair, all at once on one io_context (fast bulk setup).
inline Status put_many(Store& store, BucketId bucket,
                       const std::vector<std::pair<std::string, std::string>>& objects) {
  boost::asio::io_context io;
  Status first_error;
  for (const auto& [name, data] : objects) {
    boost::asio::co_spawn(
        io,
        [&, object = ObjectRef{bucket, name}, bytes = data]() -> Awaitable<void> {
          Result<wire::ObjectRecord> record = co_await put_object(store, object, bytes, fast());
          if (!record && first_error.is_ok()) first_error = record.status();
        },
        boost::asio::detached);
  }
  io.run();
  return first_error;
}

inline std::string read_all(int fd) {
  std::string out;
  char buffer[65536];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer), offset);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
    offset += n;
  }
  return out;
}

inline Result<std::string> get(Store& store, const ObjectRef& object) {
  Result<OpenObject> open = run(store.open(object));
  if (!open) return open.error();
  return read_all(open->fd());
}

// Regular files below `dir`, as paths relative to it.
inline std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(it->path().lexically_relative(dir).string());
  }
  return out;
}

// The path of the one object file under `mountpath` (a failure when there is not exactly one).
inline std::string only_object_file(const std::string& mountpath) {
  const std::vector<std::string> files = files_under(mountpath + "/obj");
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? std::string() : mountpath + "/obj/" + files[0];
}

inline std::unique_ptr<Store> open_store(const std::vector<std::string>& mountpaths) {
  StoreOptions options;
  options.mountpaths = mountpaths;
  options.threads_per_mountpath = 2;
  Result<std::unique_ptr<Store>> store = Store::open(std::move(options));
  EXPECT_TRUE(store.has_value()) << store.status();
  return store ? std::move(*store) : nullptr;
}

// Writes raw bytes as the record of (bucket, name), straight into the RocksDB of a
// closed mountpath: how tests make a corrupt record.
inline bool write_raw_record(const std::string& mountpath, BucketId bucket, std::string_view name,
                             std::string_view value) {
  const std::string dir = mountpath + "/meta";
  rocksdb::DBOptions options;
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(options, dir, &names).ok()) return false;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& family : names)
    families.emplace_back(family, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::Open(options, dir, families, &handles, &db).ok()) return false;
  bool is_written = false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "objects") {
      is_written = db->Put(rocksdb::WriteOptions(), handles[i], detail::object_key(bucket, name),
                           detail::to_slice(value))
                       .ok();
    }
  }
  for (rocksdb::ColumnFamilyHandle* handle : handles)
    std::ignore = db->DestroyColumnFamilyHandle(handle);
  delete db;
  return is_written;
}

}  // namespace silo::store::testing
