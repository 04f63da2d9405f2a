#pragma once

#include <sstream>

namespace silo::detail_check {

// Collects the message of a failed check and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `SILO_CHECK(x) << ...` parse as an expression of type void.
struct Voidify {
  void operator&(CheckFailure&) {}
};

}  // namespace silo::detail_check

// SILO_CHECK is for bugs: it aborts in every build. Client input and bytes read from disk
// get a Status, never a CHECK (STYLE.md 2.4).
#define SILO_CHECK(cond)                         \
  (cond) ? (void)0                               \
         : ::silo::detail_check::Voidify() &     \
               ::silo::detail_check::CheckFailure(__FILE__, __LINE__, #cond)

#ifdef NDEBUG
#define SILO_DCHECK(cond) SILO_CHECK(true || (cond))
#else
#define SILO_DCHECK(cond) SILO_CHECK(cond)
#endif
