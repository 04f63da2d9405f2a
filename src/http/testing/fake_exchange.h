#pragma once

// An exchange in memory for the tests of handlers (proxy, target, the data services, the
// cache): a request head and body given up front, and the response a handler sends kept
// whole (send_file reads the file). Header only, for tests.
#include <unistd.h>

#include <boost/asio/any_io_executor.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "http/server.h"

namespace silo::http::testing {

class FakeExchange : public http::Exchange, public http::ResponseWriter, public http::BodyReader {
 public:
  FakeExchange(boost::asio::any_io_executor executor, http::Method method = http::Method::kGet,
               std::string path = "/", std::string body = "")
      : executor_(std::move(executor)), body_(std::move(body)) {
    request_.method = method;
    request_.method_text = std::string(http::method_name(method));
    request_.path = path;
    request_.target = std::move(path);
    request_.content_length = body_.size();
  }
  const http::RequestHead& request() const override { return request_; }
  http::BodyReader& body() override { return *this; }
  http::ResponseWriter& response() override { return *this; }
  boost::asio::any_io_executor executor() override { return executor_; }

  http::Awaitable<Status> send(http::ResponseHead head, std::string body) override {
    head_ = std::move(head);
    sent_ = std::move(body);
    has_begun_ = true;
    co_return Status::ok();
  }
  http::Awaitable<Status> begin(http::ResponseHead head, std::optional<uint64_t> length) override {
    head_ = std::move(head);
    length_ = length;
    has_begun_ = true;
    co_return Status::ok();
  }
  http::Awaitable<Status> write(std::span<const char> data) override {
    sent_.append(data.data(), data.size());
    co_return Status::ok();
  }
  http::Awaitable<Status> send_file(int fd, uint64_t offset, uint64_t length) override {
    std::string bytes(length, '\0');
    if (::pread(fd, bytes.data(), length, static_cast<off_t>(offset)) != static_cast<ssize_t>(length)) {
      co_return Status::data_loss("short pread");
    }
    sent_ += bytes;
    ++sends_;
    co_return Status::ok();
  }
  bool has_begun() const override { return has_begun_; }
  void cut() override { is_cut_ = true; }
  http::Awaitable<Result<size_t>> read(std::span<char> out) override {
    const size_t n = std::min(out.size(), body_.size() - read_);
    std::memcpy(out.data(), body_.data() + read_, n);
    read_ += n;
    co_return n;
  }
  bool is_done() const override { return read_ == body_.size(); }

  // The request as a handler sees it; a test may add headers or query before the call.
  http::RequestHead& request_head() { return request_; }
  int status() const { return has_begun_ ? head_.status : 0; }  // 0: nothing sent
  const http::ResponseHead& head() const { return head_; }
  const std::string& sent() const { return sent_; }
  std::optional<uint64_t> length() const { return length_; }  // as begin() announced it
  int sends() const { return sends_; }  // send_file calls
  bool is_cut() const { return is_cut_; }

 private:
  boost::asio::any_io_executor executor_;
  http::RequestHead request_;
  std::string body_;
  bool is_cut_ = false;
  size_t read_ = 0;
  http::ResponseHead head_;
  std::optional<uint64_t> length_;
  std::string sent_;
  bool has_begun_ = false;
  int sends_ = 0;
};

}  // namespace silo::http::testing
