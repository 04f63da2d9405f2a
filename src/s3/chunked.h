#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "s3/checksum.h"

namespace silo::s3 {

// What checking chunk signatures takes (from the request's Authenticated).
struct ChunkSigning {
  std::string signing_key;
  std::string amz_date;
  std::string scope;
  std::string seed_signature;
};

// Decodes an aws-chunked request body incrementally with bounded memory:
//   signed:   <hex size>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
//   unsigned: <hex size>\r\n<data>\r\n ... 0\r\n
// then trailers ("name:value\r\n", with x-amz-trailer-signature when signed) and \r\n.
// Each chunk's signature chains from the previous one, starting at the seed signature.
// Payload bytes are handed out while their chunk is still being hashed: the caller must
// not commit anything before is_done() (a later signature may still fail). Memory stays
// bounded: a framing line may be 4 KiB, all trailers together 16 KiB.
// Errors carry the S3 code as reason: SignatureDoesNotMatch (kPermissionDenied) for a
// chunk or trailer signature; IncompleteBody (kInvalidArgument) for any malformed framing
// (bad hex size, missing chunk-signature, no CRLF, overlong line, data longer than its
// size) and from finish() when the body ended early. Bytes after the closing CRLF are
// left unconsumed. Not thread-safe; one decoder per request body.
class ChunkedDecoder {
 public:
  ChunkedDecoder(std::optional<ChunkSigning> signing, bool expect_trailer);
  struct Step {
    size_t consumed = 0;
    size_t produced = 0;
  };
  // Decodes from `in` into `out`; stops when `in` is used up, `out` is full, or the body
  // ended. Framing may be split across calls at any byte.
  Result<Step> decode(std::span<const char> in, std::span<char> out);
  bool is_done() const { return state_ == State::kDone; }
  // The body ended (no more input): IncompleteBody unless is_done().
  Status finish() const;
  // Trailer headers, names lowercased; x-amz-trailer-signature is not among them.
  const std::vector<std::pair<std::string, std::string>>& trailers() const { return trailers_; }
  uint64_t decoded_bytes() const { return decoded_; }

 private:
  enum class State { kSizeLine, kData, kDataEnd, kFinalEnd, kTrailer, kDone };
  Status on_size_line();
  Status end_chunk();
  Status on_trailer_line();
  std::string chunk_string_to_sign(const std::string& data_hash) const;

  std::optional<ChunkSigning> signing_;
  bool expect_trailer_;
  State state_ = State::kSizeLine;
  std::string line_;  // the framing line being read
  uint64_t remaining_ = 0;
  std::string chunk_signature_;
  std::string previous_signature_;
  std::unique_ptr<Sha256> chunk_hash_;
  std::string trailer_text_;  // "name:value\n" lines, for the trailer signature
  std::string trailer_signature_;
  std::vector<std::pair<std::string, std::string>> trailers_;
  size_t trailer_bytes_ = 0;
  uint64_t decoded_ = 0;
};

}  // namespace silo::s3
