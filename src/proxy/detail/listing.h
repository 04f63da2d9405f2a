#pragma once

// The proxy's listing steps that need no I/O: merging the targets' pages, continuation
// tokens, and folding a merged listing into an S3 page. Pure, so tested without a cluster.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "wire/codec.h"

namespace silo::proxy::detail {

// Sorted names, and whether more follow the last of them.
using MergedPage = std::pair<std::vector<wire::ListEntry>, bool>;

// Merges the sorted pages of every target (and of a remote bucket's backend) into one
// sorted page of at most `limit` names. A source that had more than it sent (truncated)
// knows nothing past its last name, so the page ends at the smallest such name; there is
// more whenever a source was truncated or the page was cut. A name from several sources
// appears once: the newest (a rebalance may have it on two targets for a while), and a
// cached copy rather than the backend's entry. The first failed page fails the merge.
Result<MergedPage> merge_pages(std::vector<Result<wire::ListPage>>& pages, size_t limit);

// The continuation token of a listing that goes on after `name`: its hex, opaque to
// clients and safe in a URL without escaping.
std::string token_of(std::string_view name);
// The name a token came from; nullopt when it is not one (each API words its own error).
std::optional<std::string> name_of_token(std::string_view token);

// Folds a merged listing into one S3 ListObjects page: the keys, and with a delimiter the
// common prefixes that stand for every key under them, at most `max_keys` of both
// together. Feed it names in order with add(); owned by one listing request.
class S3PageFolder {
 public:
  S3PageFolder(std::string prefix, std::string delimiter, size_t max_keys);

  // Where a listing resumed after `marker` starts (exclusive): past every name under the
  // marker when it is one of this listing's common prefixes (the NextMarker of a folded
  // page), else the marker itself.
  std::string start_after(std::string marker) const;
  // Takes the next name of the listing. False once the page is full: `entry` was not
  // taken, and the page is truncated. Moves from `entry` when it becomes a key.
  bool add(wire::ListEntry& entry);
  // Where the next fetch starts after `last_name`, the last name given to add(): past the
  // last common prefix when the name is under it (those names would fold away again).
  std::string fetch_after(const std::string& last_name) const;

  const std::vector<wire::ListEntry>& contents() const { return contents_; }
  const std::vector<std::string>& prefixes() const { return prefixes_; }
  // Keys and common prefixes on the page.
  size_t count() const { return count_; }
  bool is_truncated() const { return is_truncated_; }
  // The last key or common prefix on the page (NextMarker, NextKeyMarker).
  const std::string& last_item() const { return last_item_; }
  // Where the next page starts (exclusive; its continuation token).
  const std::string& resume_from() const { return resume_from_; }

 private:
  // Whether one more key or common prefix fits; marks the page truncated when not.
  bool has_room();

  const std::string prefix_;
  const std::string delimiter_;
  const size_t max_keys_;
  std::vector<wire::ListEntry> contents_;
  std::vector<std::string> prefixes_;
  size_t count_ = 0;
  bool is_truncated_ = false;
  std::string last_item_;
  std::string resume_from_;
};

}  // namespace silo::proxy::detail
