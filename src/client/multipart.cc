// Client::put_multipart: a large upload as S3 multipart parts sent in parallel (the S3 API
// on the same endpoint and keys as the native one).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/text.h"
#include "client/client.h"
#include "http/message.h"

namespace silo::client {

namespace {

// The text of the first <tag>...</tag> in `xml` ("" when absent).
std::string xml_text(std::string_view xml, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  const size_t from = xml.find(open);
  if (from == std::string_view::npos) return "";
  const size_t start = from + open.size();
  const size_t end = xml.find(close, start);
  return end == std::string_view::npos ? "" : std::string(xml.substr(start, end - start));
}

std::string unquoted(std::string text) {
  for (const std::string_view quote : {"&quot;", "&#34;"}) {
    for (size_t at; (at = text.find(quote)) != std::string::npos;) text.erase(at, quote.size());
  }
  std::erase(text, '"');
  return text;
}

}  // namespace

Result<PutResult> Client::put_multipart(std::string_view bucket, std::string_view name, uint64_t size,
                                        uint64_t part_size, int workers, const ReadAtFn& read_at,
                                        const std::function<void(uint64_t)>& on_bytes) {
  if (part_size < (5ull << 20)) return Status::invalid_argument("a part is at least 5 MiB (S3), not {} bytes", part_size);
  if (size == 0) return Status::invalid_argument("an empty object has no parts: PUT it whole");
  const std::string key = "/" + text::percent_encode(bucket) + "/" + text::percent_encode_path(name);
  const std::string what = fmt::format("multipart upload of {}/{}", bucket, name);
  ASSIGN_OR_RETURN(const Response created, request(http::Method::kPost, key + "?uploads"));
  RETURN_IF_ERROR(status_of(created, "CreateMultipartUpload " + key));
  const std::string upload_id = xml_text(created.body, "UploadId");
  if (upload_id.empty()) return Status::internal("{}: no UploadId in {}", what, created.body);
  const std::string upload = "uploadId=" + text::percent_encode(upload_id);

  const uint64_t parts = (size + part_size - 1) / part_size;
  std::vector<std::string> etags(parts);
  std::atomic<uint64_t> next{0};
  struct {
    Mutex mutex;
    Status first GUARDED_BY(mutex);  // the first part that failed
  } failure;
  const auto send_parts = [&] {
    for (uint64_t i = next++; i < parts; i = next++) {
      {
        MutexLock lock(failure.mutex);
        if (!failure.first.is_ok()) return;
      }
      const uint64_t offset = i * part_size, length = std::min(part_size, size - offset);
      std::string body(length, '\0');
      Status s;
      for (uint64_t got = 0; got < length && s.is_ok();) {
        auto n = read_at(offset + got, std::span<char>(body.data() + got, length - got));
        if (!n) s = n.status();
        else if (*n == 0) s = Status::data_loss("{}: the source ended at byte {} of {}", what, offset + got, size);
        else got += *n;
      }
      if (s.is_ok()) {
        auto r = request(http::Method::kPut, fmt::format("{}?partNumber={}&{}", key, i + 1, upload), std::move(body));
        s = r ? status_of(*r, fmt::format("UploadPart {} of {}", i + 1, key)) : r.status();
        if (s.is_ok()) etags[i] = unquoted(std::string(r->headers.get("ETag").value_or("")));
      }
      if (!s.is_ok()) {
        MutexLock lock(failure.mutex);
        if (failure.first.is_ok()) failure.first = s;
        return;
      }
      if (on_bytes) on_bytes(length);
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < std::max(1, workers) && static_cast<uint64_t>(w) < parts; ++w) threads.emplace_back(send_parts);
  for (auto& t : threads) t.join();
  Status done;
  {
    MutexLock lock(failure.mutex);
    done = failure.first;
  }
  if (done.is_ok()) {
    std::string xml = "<CompleteMultipartUpload>";
    for (uint64_t i = 0; i < parts; ++i) {
      xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>\"{}\"</ETag></Part>", i + 1, etags[i]);
    }
    xml += "</CompleteMultipartUpload>";
    auto completed = request(http::Method::kPost, key + "?" + upload, std::move(xml));
    done = completed ? status_of(*completed, "CompleteMultipartUpload " + key) : completed.status();
    // S3 may answer 200 and put the error in the body.
    if (done.is_ok() && completed->body.find("<Error>") != std::string::npos) {
      done = Status::unavailable("{}: {}", what, xml_text(completed->body, "Message"));
    }
    if (done.is_ok()) return PutResult{std::string(name), size, unquoted(xml_text(completed->body, "ETag"))};
  }
  std::ignore = request(http::Method::kDelete, key + "?" + upload);  // the parts go
  return done;
}

}  // namespace silo::client
