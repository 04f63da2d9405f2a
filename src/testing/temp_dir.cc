#include "testing/temp_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace silo::testing {

Result<TempDir> TempDir::create(std::string_view prefix) {
  std::string pattern = "/tmp/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return Status::from_errno(errno, "mkdtemp " + pattern);
  return TempDir(std::move(pattern));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), is_kept_(other.is_kept_) {
  other.path_.clear();
}

TempDir::~TempDir() {
  if (path_.empty() || is_kept_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: a leftover dir in /tmp is harmless
}

std::vector<std::string> list_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot open {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace silo::testing
