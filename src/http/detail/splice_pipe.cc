#include "http/detail/splice_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace silo::http::detail {
namespace {

constexpr size_t kIdlePerThread = 4;

std::vector<SplicePipe>& idle_pipes() {
  thread_local std::vector<SplicePipe> idle;
  return idle;
}

}  // namespace

SplicePipe::~SplicePipe() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

Result<SplicePipe> SplicePipe::take() {
  std::vector<SplicePipe>& idle = idle_pipes();
  if (!idle.empty()) {
    SplicePipe pipe = std::move(idle.back());
    idle.pop_back();
    return pipe;
  }
  SplicePipe pipe;
  if (::pipe2(pipe.fds_, O_NONBLOCK | O_CLOEXEC) != 0) return Status::from_errno(errno, "pipe2");
  std::ignore = ::fcntl(pipe.fds_[1], F_SETPIPE_SZ, 1 << 20);  // best effort; the default is 64 KiB
  const int capacity_or_error = ::fcntl(pipe.fds_[1], F_GETPIPE_SZ);
  pipe.capacity_ = capacity_or_error > 0 ? static_cast<uint64_t>(capacity_or_error) : 65536;
  return pipe;
}

void SplicePipe::give_back(SplicePipe pipe) {
  std::vector<SplicePipe>& idle = idle_pipes();
  if (idle.size() < kIdlePerThread) idle.push_back(std::move(pipe));
}

}  // namespace silo::http::detail
