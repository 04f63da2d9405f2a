#include "proxy/detail/listing.h"

#include <charconv>

#include "base/hash.h"

namespace silo::proxy::detail {
namespace {

// Past every name under `common_prefix`: names are UTF-8, whose bytes never reach 0xff.
std::string past_prefix(const std::string& common_prefix) { return common_prefix + "\xff"; }

// Whether `kept` should give way to `other`, an entry of the same name from another source.
bool is_better(const wire::ListEntry& other, const wire::ListEntry& kept) {
  if (kept.is_remote_only() != other.is_remote_only()) return kept.is_remote_only();
  return other.mtime_unix_nanos() > kept.mtime_unix_nanos();
}

}  // namespace

Result<MergedPage> merge_pages(std::vector<Result<wire::ListPage>>& pages, size_t limit) {
  std::optional<std::string> cutoff;
  bool is_truncated = false;
  for (auto& page : pages) {
    if (!page) return std::move(page).error();
    if (!page->is_truncated() || page->entries().empty()) continue;
    is_truncated = true;
    const std::string& last = page->entries().rbegin()->name();
    if (!cutoff || last < *cutoff) cutoff = last;
  }
  std::vector<int> next(pages.size(), 0);
  std::vector<wire::ListEntry> merged;
  merged.reserve(limit);
  for (;;) {
    size_t best = pages.size();
    for (size_t i = 0; i < pages.size(); ++i) {
      const auto& entries = pages[i]->entries();
      if (next[i] == entries.size()) continue;
      if (best == pages.size() ||
          entries[next[i]].name() < pages[best]->entries()[next[best]].name())
        best = i;
    }
    if (best == pages.size()) break;
    auto& entry = (*pages[best]->mutable_entries())[next[best]];
    if (cutoff && entry.name() > *cutoff) break;
    ++next[best];
    if (!merged.empty() && merged.back().name() == entry.name()) {
      if (is_better(entry, merged.back())) merged.back() = std::move(entry);
      continue;
    }
    if (merged.size() == limit) {
      is_truncated = true;
      break;
    }
    merged.push_back(std::move(entry));
  }
  return std::make_pair(std::move(merged), is_truncated);
}

std::string token_of(std::string_view name) {
  return hash::to_hex({reinterpret_cast<const unsigned char*>(name.data()), name.size()});
}

std::optional<std::string> name_of_token(std::string_view token) {
  if (token.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(token.size() / 2);
  for (size_t i = 0; i < token.size(); i += 2) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(token.data() + i, token.data() + i + 2, value, 16);
    if (ec != std::errc() || end != token.data() + i + 2) return std::nullopt;
    out.push_back(static_cast<char>(value));
  }
  return out;
}

S3PageFolder::S3PageFolder(std::string prefix, std::string delimiter, size_t max_keys)
    : prefix_(std::move(prefix)), delimiter_(std::move(delimiter)), max_keys_(max_keys) {}

std::string S3PageFolder::start_after(std::string marker) const {
  const bool is_common_prefix =
      !delimiter_.empty() && marker.size() >= prefix_.size() + delimiter_.size() &&
      marker.starts_with(prefix_) && marker.ends_with(delimiter_) &&
      marker.find(delimiter_, prefix_.size()) == marker.size() - delimiter_.size();
  return is_common_prefix ? past_prefix(marker) : marker;
}

bool S3PageFolder::has_room() {
  if (count_ < max_keys_) return true;
  is_truncated_ = true;
  return false;
}

bool S3PageFolder::add(wire::ListEntry& entry) {
  const std::string& name = entry.name();
  if (!delimiter_.empty()) {
    if (const size_t at = name.find(delimiter_, prefix_.size()); at != std::string::npos) {
      std::string common = name.substr(0, at + delimiter_.size());
      if (!prefixes_.empty() && prefixes_.back() == common) return true;  // folded into it
      if (!has_room()) return false;
      ++count_;
      last_item_ = common;
      resume_from_ = past_prefix(common);
      prefixes_.push_back(std::move(common));
      return true;
    }
  }
  if (!has_room()) return false;
  ++count_;
  last_item_ = name;
  resume_from_ = name;
  contents_.push_back(std::move(entry));
  return true;
}

std::string S3PageFolder::fetch_after(const std::string& last_name) const {
  if (!prefixes_.empty() && last_name.starts_with(prefixes_.back()))
    return past_prefix(prefixes_.back());
  return last_name;
}

}  // namespace silo::proxy::detail
