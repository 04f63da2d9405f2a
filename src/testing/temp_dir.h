#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::testing {

// A fresh directory under /tmp, removed with its contents when destroyed unless keep()
// was called. Move-only.
class TempDir {
 public:
  // mkdtemp("/tmp/<prefix>-XXXXXX").
  static Result<TempDir> create(std::string_view prefix = "silo-test");
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();

  const std::string& path() const { return path_; }
  void keep() { is_kept_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool is_kept_ = false;
};

// Regular files under `dir`, recursively, as full paths in sorted order ({} if missing).
std::vector<std::string> list_files(const std::string& dir);
// The whole content of a file; kNotFound when it does not exist.
Result<std::string> read_file(const std::string& path);

}  // namespace silo::testing
