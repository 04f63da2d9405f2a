#include "http/message.h"

#include <strings.h>

#include <algorithm>

#include "base/text.h"

namespace silo::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string_view method_name(Method method) {
  switch (method) {
    case Method::kGet: return "GET";
    case Method::kHead: return "HEAD";
    case Method::kPut: return "PUT";
    case Method::kPost: return "POST";
    case Method::kDelete: return "DELETE";
    case Method::kOptions: return "OPTIONS";
    case Method::kOther: return "OTHER";
  }
  return "OTHER";
}

void Headers::set(std::string_view name, std::string value) {
  remove(name);
  fields_.emplace_back(std::string(name), std::move(value));
}

void Headers::add(std::string_view name, std::string value) {
  fields_.emplace_back(std::string(name), std::move(value));
}

void Headers::remove(std::string_view name) {
  std::erase_if(fields_, [&](const auto& field) { return iequals(field.first, name); });
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [field_name, value] : fields_) {
    if (iequals(field_name, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::optional<std::string> RequestHead::query_param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string_view raw_name = pair.substr(0, eq);
    const std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    // Names are compared decoded so "?part%4Eumber=1" matches "partNumber" as S3 does; a
    // name that does not decode cannot be the one asked for.
    Result<std::string> decoded_name = text::percent_decode(raw_name);
    if (!decoded_name || *decoded_name != name) continue;
    // Query strings from HTML forms use '+' for space; S3 clients encode space as %20, and a
    // literal '+' in a value must survive, so '+' is kept as is.
    Result<std::string> value = text::percent_decode(raw_value);
    if (!value) return std::string(raw_value);
    return std::move(value).value();
  }
  return std::nullopt;
}

Awaitable<Result<std::string>> read_all(BodyReader& body, size_t max_bytes) {
  std::string out;
  constexpr size_t kChunk = 64 * 1024;
  while (true) {
    const size_t old_size = out.size();
    out.resize(old_size + kChunk);
    Result<size_t> n = co_await body.read(std::span<char>(out.data() + old_size, kChunk));
    if (!n) co_return std::move(n).error();
    out.resize(old_size + *n);
    if (*n == 0) break;
    if (out.size() > max_bytes) {
      co_return Status::invalid_argument("body is larger than {} bytes", max_bytes);
    }
  }
  co_return out;
}

}  // namespace silo::http
