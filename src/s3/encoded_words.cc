#include "s3/encoded_words.h"

#include <algorithm>
#include <optional>
#include <span>

#include "base/base64.h"

namespace silo::s3 {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The Q encoding (RFC 2047 4.2): '_' is a space, =XX a byte, the rest as is.
std::optional<std::string> decode_q(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '_') {
      out += ' ';
    } else if (text[i] == '=') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_digit(text[i + 1]);
      const int lo = hex_digit(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string latin1_to_utf8(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      out += c;
    } else {
      out += static_cast<char>(0xC0 | (byte >> 6));
      out += static_cast<char>(0x80 | (byte & 0x3F));
    }
  }
  return out;
}

// One word `=?charset?enc?text?=` at the start of `in`: its decoded text and length.
std::optional<std::pair<std::string, size_t>> decode_word(std::string_view in) {
  if (!in.starts_with("=?")) return std::nullopt;
  const size_t q1 = in.find('?', 2);
  if (q1 == std::string_view::npos || q1 + 2 >= in.size() || in[q1 + 2] != '?') return std::nullopt;
  const size_t end = in.find("?=", q1 + 3);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view charset = in.substr(2, q1 - 2);
  if (const size_t star = charset.find('*'); star != std::string_view::npos) charset = charset.substr(0, star);  // RFC 2231 language
  const char encoding = static_cast<char>(std::toupper(static_cast<unsigned char>(in[q1 + 1])));
  const std::string_view text = in.substr(q1 + 3, end - q1 - 3);
  if (text.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  std::optional<std::string> bytes;
  if (encoding == 'B') {
    auto decoded = base64::decode(text);
    if (decoded) bytes = std::move(*decoded);
  } else if (encoding == 'Q') {
    bytes = decode_q(text);
  }
  if (!bytes) return std::nullopt;
  if (iequals(charset, "ISO-8859-1") || iequals(charset, "latin1")) return std::pair{latin1_to_utf8(*bytes), end + 2};
  if (iequals(charset, "UTF-8") || iequals(charset, "US-ASCII")) return std::pair{std::move(*bytes), end + 2};
  return std::nullopt;
}

}  // namespace

std::string decode_encoded_words(std::string_view value) {
  if (value.find("=?") == std::string_view::npos) return std::string(value);
  std::string out;
  size_t pending_space_start = std::string::npos;  // whitespace after a decoded word, held back
  bool after_word = false;
  for (size_t i = 0; i < value.size();) {
    if (auto word = decode_word(value.substr(i))) {
      if (pending_space_start != std::string::npos && !after_word) out.append(value.substr(pending_space_start, i - pending_space_start));
      pending_space_start = std::string::npos;
      out += word->first;
      i += word->second;
      after_word = true;
      continue;
    }
    if (value[i] == ' ' || value[i] == '\t') {
      if (pending_space_start == std::string::npos) pending_space_start = i;
      ++i;
      continue;
    }
    if (pending_space_start != std::string::npos) out.append(value.substr(pending_space_start, i - pending_space_start));
    pending_space_start = std::string::npos;
    out += value[i++];
    after_word = false;
  }
  if (pending_space_start != std::string::npos) out.append(value.substr(pending_space_start));
  return out;
}

std::string encode_header_value(std::string_view value) {
  const bool is_plain = std::all_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte == '\t' || (byte >= 0x20 && byte < 0x7F);
  });
  if (is_plain) return std::string(value);
  return "=?UTF-8?B?" +
         base64::encode(std::span(reinterpret_cast<const unsigned char*>(value.data()), value.size())) + "?=";
}

}  // namespace silo::s3
