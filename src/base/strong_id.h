#pragma once

#include <compare>
#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace silo {

// A value of type T that only compares with values of the same Tag, so that a NodeId can
// not be passed where a BucketName is expected.
template <typename T, typename Tag>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(T value) : value_(std::move(value)) {}
  const T& value() const { return value_; }
  auto operator<=>(const StrongId&) const = default;
  bool operator==(const StrongId&) const = default;

 private:
  T value_{};
};

using NodeId = StrongId<std::string, struct NodeIdTag>;
using BucketId = StrongId<uint64_t, struct BucketIdTag>;

}  // namespace silo

template <typename T, typename Tag>
struct std::hash<silo::StrongId<T, Tag>> {
  size_t operator()(const silo::StrongId<T, Tag>& id) const { return std::hash<T>()(id.value()); }
};

template <typename T, typename Tag>
struct fmt::formatter<silo::StrongId<T, Tag>> : fmt::formatter<T> {
  auto format(const silo::StrongId<T, Tag>& id, fmt::format_context& ctx) const {
    return fmt::formatter<T>::format(id.value(), ctx);
  }
};
