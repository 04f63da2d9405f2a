#pragma once

// Clang thread-safety annotations (no-ops under GCC). Shared mutable state is guarded by
// a mutex named in GUARDED_BY, or reached only through its owner's strand.
// libstdc++'s std::mutex carries no capability attribute, so annotate members guarded by
// a silo::Mutex (base/mutex.h), not a std::mutex. tools/check_thread_safety.sh runs
// clang's -Wthread-safety over the tree (tools/test.sh runs it) and fails on a violation.
// See https://clang.llvm.org/docs/ThreadSafetyAnalysis.html for the meaning of each one.
#if defined(__clang__)
#define SILO_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SILO_THREAD_ANNOTATION(x)
#endif

// On data members.
#define GUARDED_BY(x) SILO_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SILO_THREAD_ANNOTATION(pt_guarded_by(x))
// On mutexes: lock order.
#define ACQUIRED_BEFORE(...) SILO_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) SILO_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// On functions.
#define REQUIRES(...) SILO_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SILO_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) SILO_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SILO_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SILO_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) SILO_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) SILO_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off for one function; say why next to it.
#define NO_THREAD_SAFETY_ANALYSIS SILO_THREAD_ANNOTATION(no_thread_safety_analysis)
// On classes: a lock type, and an RAII holder of one.
#define CAPABILITY(x) SILO_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SILO_THREAD_ANNOTATION(scoped_lockable)
