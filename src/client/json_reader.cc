#include "client/json_reader.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace silo::client {

namespace {

void dump_string(std::string_view text, std::string& out) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

std::string JsonValue::dump() const {
  switch (kind_) {
    case Kind::kNull: return "null";
    case Kind::kBool:
    case Kind::kNumber: return text_;
    case Kind::kString: {
      std::string out;
      dump_string(text_, out);
      return out;
    }
    case Kind::kArray: {
      std::string out = "[";
      for (const JsonValue& item : items_) out += (out.size() > 1 ? "," : "") + item.dump();
      return out + "]";
    }
    case Kind::kObject: {
      std::string out = "{";
      for (const auto& [key, value] : members_) {
        if (out.size() > 1) out += ',';
        dump_string(key, out);
        out += ':' + value.dump();
      }
      return out + "}";
    }
  }
  return "null";
}

const JsonValue& JsonValue::operator[](std::string_view key) const {
  static const JsonValue kNull;
  const auto it = members_.find(key);
  return it == members_.end() ? kNull : it->second;
}

Result<uint64_t> JsonValue::to_u64() const {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (kind_ != Kind::kNumber || ec != std::errc() || end != text_.data() + text_.size()) {
    return Status::invalid_argument("JSON value '{}' is not a non-negative integer", text_);
  }
  return v;
}

Result<int64_t> JsonValue::to_i64() const {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (kind_ != Kind::kNumber || ec != std::errc() || end != text_.data() + text_.size()) {
    return Status::invalid_argument("JSON value '{}' is not an integer", text_);
  }
  return v;
}

// Recursive descent over the text; depth is bounded so hostile input cannot overflow
// the stack.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Result<JsonValue> document() {
    JsonValue v;
    RETURN_IF_ERROR(value(v, 0));
    skip_space();
    if (pos_ != text_.size()) return error("trailing bytes after the document");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  Status error(std::string_view what) const {
    return Status::invalid_argument("bad JSON at offset {}: {}", pos_, what);
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return error("nested too deeply");
    skip_space();
    if (pos_ >= text_.size()) return error("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind_ = JsonValue::Kind::kString;
      return string(out.text_);
    }
    for (const std::string_view word : {std::string_view("true"), std::string_view("false")}) {
      if (consume(word)) {
        out.kind_ = JsonValue::Kind::kBool;
        out.text_ = std::string(word);
        return Status::ok();
      }
    }
    if (consume("null")) {
      out.kind_ = JsonValue::Kind::kNull;
      return Status::ok();
    }
    return number(out);
  }

  Status number(JsonValue& out) {
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
                                   text_[pos_] == '+' || text_[pos_] == '.' || text_[pos_] == 'e' ||
                                   text_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == start) return error("expected a value");
    out.kind_ = JsonValue::Kind::kNumber;
    out.text_ = std::string(text_.substr(start, pos_ - start));
    return Status::ok();
  }

  Status object(JsonValue& out, int depth) {
    out.kind_ = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    skip_space();
    if (consume("}")) return Status::ok();
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') return error("expected a member name");
      std::string key;
      RETURN_IF_ERROR(string(key));
      skip_space();
      if (!consume(":")) return error("expected ':'");
      JsonValue member;
      RETURN_IF_ERROR(value(member, depth + 1));
      out.members_.insert_or_assign(std::move(key), std::move(member));
      skip_space();
      if (consume(",")) continue;
      if (consume("}")) return Status::ok();
      return error("expected ',' or '}'");
    }
  }

  Status array(JsonValue& out, int depth) {
    out.kind_ = JsonValue::Kind::kArray;
    ++pos_;  // '['
    skip_space();
    if (consume("]")) return Status::ok();
    for (;;) {
      JsonValue item;
      RETURN_IF_ERROR(value(item, depth + 1));
      out.items_.push_back(std::move(item));
      skip_space();
      if (consume(",")) continue;
      if (consume("]")) return Status::ok();
      return error("expected ',' or ']'");
    }
  }

  Result<uint32_t> hex4() {
    if (pos_ + 4 > text_.size()) return error("truncated \\u escape");
    uint32_t v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, v, 16);
    if (ec != std::errc() || end != text_.data() + pos_ + 4) return error("bad \\u escape");
    pos_ += 4;
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Status string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= text_.size()) return error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return Status::ok();
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return error("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          ASSIGN_OR_RETURN(uint32_t cp, hex4());
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair encodes one code point
            if (!consume("\\u")) return error("lone high surrogate");
            ASSIGN_OR_RETURN(const uint32_t low, hex4());
            if (low < 0xDC00 || low >= 0xE000) return error("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: return error("unknown escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Result<JsonValue> parse_json(std::string_view text) { return JsonParser(text).document(); }

Result<JsonValue> parse_answer_object(std::string_view body, std::string_view what) {
  Result<JsonValue> doc = parse_json(body);
  if (!doc) {
    Status status = std::move(doc).error();
    status.annotate("{}: answer", what);
    return status;
  }
  if (!doc->is_object()) return Status::internal("{}: the answer is not a JSON object", what);
  return doc;
}

}  // namespace silo::client
