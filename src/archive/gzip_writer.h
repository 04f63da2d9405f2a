#pragma once

// Compresses a stream into one gzip member (RFC 1952) as its bytes come: the output
// shards of a resharding job in tgz (docs/resharding.md). Deterministic: the same input
// gives the same bytes (no name or time in the header), so a reshard's outputs compare.
#include <zlib.h>

#include <span>
#include <string>

#include "base/result.h"
#include "base/status.h"

namespace silo::archive {

class GzipWriter {
 public:
  // `level`: zlib's 1 (fast) .. 9 (small); 6 is gzip(1)'s default.
  explicit GzipWriter(int level = 6);
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;
  ~GzipWriter();

  // Appends to `out` the compressed bytes that `data` makes ready (maybe none yet).
  Status write(std::span<const char> data, std::string& out);
  // Appends the rest and the gzip trailer (CRC-32, length); nothing may follow.
  Status finish(std::string& out);

 private:
  Status deflate_into(int flush, std::string& out);

  z_stream z_{};
  Status init_;
  bool is_finished_ = false;
};

}  // namespace silo::archive
