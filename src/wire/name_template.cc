#include "wire/name_template.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace silo::wire {
namespace {

std::optional<uint64_t> number(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The choices of one brace's inside: "a..b[..step]" or "x,y,z".
Result<std::vector<std::string>> choices_of(std::string_view inside, std::string_view text, uint64_t max_names) {
  const size_t dots = inside.find("..");
  if (dots == std::string_view::npos) {
    std::vector<std::string> out;
    size_t at = 0;
    for (;;) {
      const size_t comma = inside.find(',', at);
      out.emplace_back(inside.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (out.size() < 2) {
      return Status::invalid_argument("template '{}': a brace holds a range {{0000..0999}} or a list {{a,b}}, not '{{{}}}'",
                                      text, inside);
    }
    return out;
  }
  const std::string_view first = inside.substr(0, dots);
  std::string_view rest = inside.substr(dots + 2);
  std::string_view step_text = "1";
  if (const size_t more = rest.find(".."); more != std::string_view::npos) {
    step_text = rest.substr(more + 2);
    rest = rest.substr(0, more);
  }
  const auto from = number(first), to = number(rest), step = number(step_text);
  if (!from || !to || !step || *step == 0 || *from > *to) {
    return Status::invalid_argument("template '{}': '{{{}}}' is not a range low..high[..step] of numbers", text, inside);
  }
  const uint64_t count = (*to - *from) / *step + 1;
  if (count > max_names) return Status::invalid_argument("template '{}' names more than {} objects", text, max_names);
  std::vector<std::string> out;
  out.reserve(count);
  const size_t width = first.size();
  for (uint64_t v = *from; v <= *to; v += *step) {
    out.push_back(fmt::format("{:0{}}", v, width));
    if (*to - v < *step) break;
  }
  return out;
}

}  // namespace

Result<NameTemplate> NameTemplate::parse(std::string_view text, uint64_t max_names) {
  NameTemplate t;
  size_t at = 0;
  bool seen_brace = false;
  while (at < text.size()) {
    const size_t open = text.find('{', at);
    const size_t close_early = text.find('}', at);
    if (close_early != std::string_view::npos && (open == std::string_view::npos || close_early < open)) {
      return Status::invalid_argument("template '{}': '}}' without '{{'", text);
    }
    const std::string literal(text.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at));
    if (!literal.empty()) {
      t.parts_.push_back(Part{{literal}});
      if (!seen_brace) t.prefix_ += literal;
    }
    if (open == std::string_view::npos) break;
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos) return Status::invalid_argument("template '{}': '{{' without '}}'", text);
    const std::string_view inside = text.substr(open + 1, close - open - 1);
    if (inside.find('{') != std::string_view::npos) return Status::invalid_argument("template '{}': nested braces", text);
    ASSIGN_OR_RETURN(std::vector<std::string> choices, choices_of(inside, text, max_names));
    if (t.size_ > max_names / choices.size()) {
      return Status::invalid_argument("template '{}' names more than {} objects", text, max_names);
    }
    t.size_ *= choices.size();
    t.parts_.push_back(Part{std::move(choices)});
    seen_brace = true;
    at = close + 1;
  }
  if (t.parts_.empty()) return Status::invalid_argument("the template is empty");
  return t;
}

std::vector<std::string> NameTemplate::expand() const {
  std::vector<std::string> names;
  names.reserve(size_);
  std::vector<size_t> pick(parts_.size(), 0);
  for (uint64_t n = 0; n < size_; ++n) {
    std::string name;
    for (size_t i = 0; i < parts_.size(); ++i) name += parts_[i].choices[pick[i]];
    names.push_back(std::move(name));
    for (size_t i = parts_.size(); i-- > 0;) {
      if (++pick[i] < parts_[i].choices.size()) break;
      pick[i] = 0;
    }
  }
  return names;
}

std::string NameTemplate::name_at(uint64_t index) const {
  // Mixed radix, the last brace the lowest digit (expand()'s order).
  std::vector<size_t> pick(parts_.size(), 0);
  for (size_t i = parts_.size(); i-- > 0;) {
    const uint64_t radix = parts_[i].choices.size();
    pick[i] = static_cast<size_t>(index % radix);
    index /= radix;
  }
  std::string name;
  for (size_t i = 0; i < parts_.size(); ++i) name += parts_[i].choices[pick[i]];
  return name;
}

}  // namespace silo::wire
