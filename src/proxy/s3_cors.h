#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "http/server.h"
#include "s3/cors.h"
#include "wire/codec.h"

namespace silo::proxy {

// A bucket's CORS rules, from and into its props.
std::vector<s3::CorsRule> cors_rules_of(const wire::BucketProps& props);
void set_cors_rules(wire::BucketProps& props, const std::vector<s3::CorsRule>& rules);

// The Access-Control-* headers `rule` gives a request from `origin`; a preflight passes
// the Access-Control-Request-Headers it was asked.
http::Headers cors_headers(const s3::CorsRule& rule, std::string_view origin,
                           std::optional<std::string_view> requested_headers);

namespace detail {

// An exchange whose answer gets `extra` headers, whichever path sends it (a relayed
// target answer, an XML body, an error): the CORS headers of an allowed cross-origin
// request. Its writer is not a raw socket sink, so a relay copies instead of splicing.
class WithHeaders final : public http::Exchange, public http::ResponseWriter {
 public:
  WithHeaders(http::Exchange& inner, http::Headers extra) : inner_(inner), extra_(std::move(extra)) {}

  const http::RequestHead& request() const override { return inner_.request(); }
  http::BodyReader& body() override { return inner_.body(); }
  http::ResponseWriter& response() override { return *this; }
  boost::asio::any_io_executor executor() override { return inner_.executor(); }

  http::Awaitable<Status> send(http::ResponseHead head, std::string body) override;
  http::Awaitable<Status> begin(http::ResponseHead head, std::optional<uint64_t> content_length) override;
  http::Awaitable<Status> write(std::span<const char> data) override { return inner_.response().write(data); }
  http::Awaitable<Status> send_file(int fd, uint64_t offset, uint64_t length) override {
    return inner_.response().send_file(fd, offset, length);
  }
  bool has_begun() const override { return inner_.response().has_begun(); }
  void cut() override { inner_.response().cut(); }

 private:
  void add_to(http::ResponseHead& head) const;

  http::Exchange& inner_;
  const http::Headers extra_;
};

}  // namespace detail
}  // namespace silo::proxy
