#include "s3/chunked.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace silo::s3 {
namespace {

constexpr size_t kMaxLine = 4096;
constexpr size_t kMaxTrailerBytes = 16 * 1024;  // all trailer lines together
const std::string kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

Status incomplete(std::string_view why) {
  return Status::invalid_argument("malformed aws-chunked body: {}", why)
      .with_reason("IncompleteBody");
}

Status bad_signature(std::string_view what) {
  return Status::permission_denied(
             "The {} signature we calculated does not match the signature you provided.", what)
      .with_reason("SignatureDoesNotMatch");
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

ChunkedDecoder::ChunkedDecoder(std::optional<ChunkSigning> signing, bool expect_trailer)
    : signing_(std::move(signing)), expect_trailer_(expect_trailer) {
  if (signing_) previous_signature_ = signing_->seed_signature;
}

Status ChunkedDecoder::finish() const {
  if (state_ == State::kDone) return Status::ok();
  return incomplete("the body ended before its final chunk");
}

std::string ChunkedDecoder::chunk_string_to_sign(const std::string& data_hash) const {
  return "AWS4-HMAC-SHA256-PAYLOAD\n" + signing_->amz_date + "\n" + signing_->scope + "\n" +
         previous_signature_ + "\n" + kEmptySha256 + "\n" + data_hash;
}

Status ChunkedDecoder::on_size_line() {
  std::string_view line = line_;
  std::string_view size_text = line;
  std::string_view extension;
  if (const size_t semi = line.find(';'); semi != std::string_view::npos) {
    size_text = line.substr(0, semi);
    extension = line.substr(semi + 1);
  }
  size_text = trim(size_text);
  uint64_t size = 0;
  const auto [end, ec] =
      std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
  if (size_text.empty() || ec != std::errc() || end != size_text.data() + size_text.size()) {
    return incomplete(fmt::format("chunk size '{}' is not hexadecimal", size_text.substr(0, 32)));
  }
  if (signing_) {
    constexpr std::string_view kKey = "chunk-signature=";
    extension = trim(extension);
    if (extension.substr(0, kKey.size()) != kKey)
      return incomplete("a chunk has no chunk-signature");
    chunk_signature_ = std::string(extension.substr(kKey.size()));
    chunk_hash_ = std::make_unique<Sha256>();
  }
  remaining_ = size;
  if (size > 0) {
    state_ = State::kData;
    return Status::ok();
  }
  RETURN_IF_ERROR(end_chunk());
  state_ = expect_trailer_ ? State::kTrailer : State::kFinalEnd;
  return Status::ok();
}

Status ChunkedDecoder::end_chunk() {
  if (!signing_) return Status::ok();
  const std::string expected =
      to_hex(hmac_sha256(signing_->signing_key, chunk_string_to_sign(chunk_hash_->hex())));
  if (!equal_in_constant_time(expected, chunk_signature_)) return bad_signature("chunk");
  previous_signature_ = chunk_signature_;
  return Status::ok();
}

Status ChunkedDecoder::on_trailer_line() {
  if (line_.empty()) {
    if (signing_) {
      if (trailer_signature_.empty())
        return incomplete("signed trailers need x-amz-trailer-signature");
      const std::string text = "AWS4-HMAC-SHA256-TRAILER\n" + signing_->amz_date + "\n" +
                               signing_->scope + "\n" + previous_signature_ + "\n" +
                               sha256_hex(trailer_text_);
      const std::string expected = to_hex(hmac_sha256(signing_->signing_key, text));
      if (!equal_in_constant_time(expected, trailer_signature_)) return bad_signature("trailer");
    }
    state_ = State::kDone;
    return Status::ok();
  }
  const size_t colon = line_.find(':');
  if (colon == std::string::npos || colon == 0) return incomplete("a trailer is not name:value");
  std::string name = line_.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::string value(trim(std::string_view(line_).substr(colon + 1)));
  trailer_bytes_ += line_.size();
  if (trailer_bytes_ > kMaxTrailerBytes) return incomplete("the trailers are over 16 KiB");
  if (name == "x-amz-trailer-signature") {
    trailer_signature_ = value;
  } else {
    trailer_text_ += name + ":" + value + "\n";
    trailers_.emplace_back(std::move(name), value);
  }
  return Status::ok();
}

Result<ChunkedDecoder::Step> ChunkedDecoder::decode(std::span<const char> in, std::span<char> out) {
  Step step;
  while (state_ != State::kDone) {
    if (state_ == State::kData) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>({remaining_, in.size() - step.consumed, out.size() - step.produced}));
      if (n == 0) break;
      std::memcpy(out.data() + step.produced, in.data() + step.consumed, n);
      if (chunk_hash_) chunk_hash_->update(std::span<const char>(in.data() + step.consumed, n));
      step.consumed += n;
      step.produced += n;
      remaining_ -= n;
      decoded_ += n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    if (step.consumed == in.size()) break;
    const char c = in[step.consumed++];
    if (c != '\n') {
      // After chunk data only CRLF may come: fail at the first wrong byte.
      if ((state_ == State::kDataEnd || state_ == State::kFinalEnd) &&
          (c != '\r' || !line_.empty())) {
        return incomplete(state_ == State::kDataEnd ? "chunk data is longer than its size"
                                                    : "bytes follow the final chunk");
      }
      if (line_.size() >= kMaxLine) return incomplete("a framing line is over 4 KiB");
      line_.push_back(c);
      continue;
    }
    if (line_.empty() || line_.back() != '\r')
      return incomplete("a framing line does not end with CRLF");
    line_.pop_back();
    switch (state_) {
      case State::kSizeLine:
        RETURN_IF_ERROR(on_size_line());
        break;
      case State::kDataEnd:
        if (!line_.empty()) return incomplete("chunk data is longer than its size");
        RETURN_IF_ERROR(end_chunk());
        state_ = State::kSizeLine;
        break;
      case State::kFinalEnd:
        if (!line_.empty()) return incomplete("bytes follow the final chunk");
        state_ = State::kDone;
        break;
      case State::kTrailer:
        RETURN_IF_ERROR(on_trailer_line());
        break;
      default:
        break;
    }
    line_.clear();
  }
  return step;
}

}  // namespace silo::s3
