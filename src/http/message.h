#pragma once

// Request and response heads as Silo's own types: Beast types stop inside http/.
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace silo::http {

template <typename T>
using Awaitable = boost::asio::awaitable<T>;

enum class Method { kGet, kHead, kPut, kPost, kDelete, kOptions, kOther };
std::string_view method_name(Method method);

// Header fields in arrival order; names compare case-insensitively.
class Headers {
 public:
  // Replaces every field named `name` with one holding `value`.
  void set(std::string_view name, std::string value);
  void add(std::string_view name, std::string value);
  void remove(std::string_view name);
  std::optional<std::string_view> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct RequestHead {
  Method method = Method::kGet;
  std::string method_text;  // as received, e.g. "PATCH" when method is kOther
  std::string target;       // raw request-target: "/v1/objects/b/a%20b?x=1"
  std::string path;         // percent-decoded path: "/v1/objects/b/a b"
  std::string query;        // raw query after '?', not decoded
  Headers headers;
  std::optional<uint64_t> content_length;  // nullopt: no Content-Length (none or chunked)
  bool is_chunked = false;
  bool expects_continue = false;  // Expect: 100-continue
  std::string remote_address;
  bool is_tls = false;  // arrived over TLS

  // The percent-decoded value of query parameter `name` ("" for `?name`), nullopt if absent.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct ResponseHead {
  int status = 200;
  Headers headers;
};

// Reads a message body as a stream. Not thread-safe: one coroutine reads it.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Reads up to buffer.size() bytes; returns 0 once the body has ended.
  // Errors: kUnavailable (peer closed or reset), kDeadlineExceeded (no progress within the
  // body timeout), kInvalidArgument (malformed chunked encoding, body over its limit).
  virtual Awaitable<Result<size_t>> read(std::span<char> buffer) = 0;
  // True once read() has returned 0.
  virtual bool is_done() const = 0;
};

// Reads the rest of `body` into a string; kInvalidArgument past `max_bytes`.
Awaitable<Result<std::string>> read_all(BodyReader& body, size_t max_bytes);

}  // namespace silo::http
