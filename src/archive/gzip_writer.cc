#include "archive/gzip_writer.h"

#include <algorithm>
#include <limits>

namespace silo::archive {
namespace {
constexpr size_t kOutputStep = 64 * 1024;
}  // namespace

GzipWriter::GzipWriter(int level) {
  // windowBits 16 + 15: a gzip wrapper with a bare header (no name, mtime 0).
  const int rc = deflateInit2(&z_, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  init_ = rc == Z_OK ? Status::ok() : Status::resource_exhausted("zlib deflateInit2 failed ({})", rc);
}

GzipWriter::~GzipWriter() {
  if (init_.is_ok()) deflateEnd(&z_);
}

Status GzipWriter::write(std::span<const char> data, std::string& out) {
  RETURN_IF_ERROR(init_);
  if (is_finished_) return Status::internal("gzip: a write after finish");
  while (!data.empty()) {
    const size_t step = std::min<size_t>(data.size(), std::numeric_limits<uInt>::max());
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z_.avail_in = static_cast<uInt>(step);
    RETURN_IF_ERROR(deflate_into(Z_NO_FLUSH, out));
    data = data.subspan(step);
  }
  return Status::ok();
}

Status GzipWriter::finish(std::string& out) {
  RETURN_IF_ERROR(init_);
  if (is_finished_) return Status::internal("gzip: finished twice");
  z_.next_in = nullptr;
  z_.avail_in = 0;
  RETURN_IF_ERROR(deflate_into(Z_FINISH, out));
  is_finished_ = true;
  return Status::ok();
}

Status GzipWriter::deflate_into(int flush, std::string& out) {
  // Until zlib has taken all the input (and, finishing, written the trailer).
  for (;;) {
    const size_t had = out.size();
    out.resize(had + kOutputStep);
    z_.next_out = reinterpret_cast<Bytef*>(out.data() + had);
    z_.avail_out = static_cast<uInt>(kOutputStep);
    const int rc = deflate(&z_, flush);
    out.resize(had + kOutputStep - z_.avail_out);
    if (rc == Z_STREAM_END) return Status::ok();
    if (rc != Z_OK && rc != Z_BUF_ERROR) return Status::internal("zlib deflate failed ({})", rc);
    if (flush == Z_NO_FLUSH && z_.avail_in == 0 && z_.avail_out > 0) return Status::ok();
  }
}

}  // namespace silo::archive
