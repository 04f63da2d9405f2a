#pragma once

#include <utility>
#include <variant>

#include "base/check.h"
#include "base/status.h"

namespace silo {

// Either a T or a non-ok Status. The API mirrors std::expected (value(), error(),
// has_value(), operator*), so moving to C++23 is a rename.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(Status status) : data_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    SILO_CHECK(!std::get<1>(data_).is_ok()) << "Result built from an ok Status";
  }

  bool has_value() const { return data_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }

  const Status& error() const& {
    SILO_CHECK(!has_value()) << "error() on a Result that holds a value";
    return std::get<1>(data_);
  }
  Status&& error() && {
    SILO_CHECK(!has_value()) << "error() on a Result that holds a value";
    return std::get<1>(std::move(data_));
  }
  // The Status of this result: ok when it holds a value.
  Status status() const { return has_value() ? Status::ok() : std::get<1>(data_); }

 private:
  T& checked() {
    SILO_CHECK(has_value()) << "value() on an error Result: " << std::get<1>(data_).to_string();
    return std::get<0>(data_);
  }
  std::variant<T, Status> data_;
};

}  // namespace silo

#define SILO_CONCAT_INNER(a, b) a##b
#define SILO_CONCAT(a, b) SILO_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::silo::Status silo_status_ = (expr);           \
    if (!silo_status_.is_ok()) return silo_status_; \
  } while (0)

#define CO_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    ::silo::Status silo_status_ = (expr);              \
    if (!silo_status_.is_ok()) co_return silo_status_; \
  } while (0)

#define SILO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ret) \
  auto tmp = (expr);                                    \
  if (!tmp.has_value()) ret std::move(tmp).error();     \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  SILO_ASSIGN_OR_RETURN_IMPL(SILO_CONCAT(silo_result_, __LINE__), lhs, expr, return)
#define CO_ASSIGN_OR_RETURN(lhs, expr) \
  SILO_ASSIGN_OR_RETURN_IMPL(SILO_CONCAT(silo_result_, __LINE__), lhs, expr, co_return)
