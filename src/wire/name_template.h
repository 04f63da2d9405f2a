#pragma once

// Brace templates that name many objects at once (prefetch, evict; AIStore's syntax):
// "train-{000000..004095}.tar" (a range; the width of the first bound pads with zeros),
// "{0..100..10}" (a step), "{a,b,c}" (a list); several braces multiply.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

class NameTemplate {
 public:
  // kInvalidArgument naming the problem: unbalanced braces, a bad range, an empty list,
  // more than `max_names` names.
  static Result<NameTemplate> parse(std::string_view text, uint64_t max_names = 10'000'000);

  // How many names it expands to.
  uint64_t size() const { return size_; }
  // Every name, in order (the last brace varies fastest).
  std::vector<std::string> expand() const;
  // The name expand() lists at `index`. Requires: index < size().
  std::string name_at(uint64_t index) const;
  // The text before the first brace: every name starts with it.
  const std::string& prefix() const { return prefix_; }

 private:
  // One piece: literal text, or the choices of one brace.
  struct Part {
    std::vector<std::string> choices;  // one choice: literal text
  };
  std::vector<Part> parts_;
  std::string prefix_;
  uint64_t size_ = 1;
};

}  // namespace silo::wire
