#pragma once

// gtest assertions for Status and Result<T>: the failure message shows the Status.
#include <gtest/gtest.h>

#include "base/result.h"

namespace silo::testing {

inline const Status& status_of(const Status& s) { return s; }
template <typename T>
Status status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace silo::testing

#define ASSERT_OK(expr)                                                            \
  do {                                                                             \
    const ::silo::Status silo_assert_status_ = ::silo::testing::status_of(expr);   \
    ASSERT_TRUE(silo_assert_status_.is_ok()) << #expr << ": " << silo_assert_status_; \
  } while (0)

#define EXPECT_OK(expr)                                                            \
  do {                                                                             \
    const ::silo::Status silo_expect_status_ = ::silo::testing::status_of(expr);   \
    EXPECT_TRUE(silo_expect_status_.is_ok()) << #expr << ": " << silo_expect_status_; \
  } while (0)

// Expects `expr` (a Status or Result) to fail with `expected_code` (a silo::Code).
#define EXPECT_CODE(expr, expected_code)                                                     \
  do {                                                                              \
    const ::silo::Status silo_expect_status_ = ::silo::testing::status_of(expr);    \
    EXPECT_EQ(silo_expect_status_.code(), expected_code) << #expr << ": " << silo_expect_status_; \
  } while (0)

#define SILO_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)                        \
  auto tmp = (expr);                                                          \
  ASSERT_TRUE(tmp.has_value()) << #expr << ": " << tmp.status();              \
  lhs = std::move(tmp).value()

// `lhs = value of expr`, or a fatal failure that shows the error. For void functions.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  SILO_ASSERT_OK_AND_ASSIGN_IMPL(SILO_CONCAT(silo_assert_result_, __LINE__), lhs, expr)
