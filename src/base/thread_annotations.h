#pragma once

// Clang thread-safety annotations (no-ops under GCC). Shared mutable state is guarded by
// a mutex named in GUARDED_BY, or reached only through its owner's strand.
#if defined(__clang__)
#define SILO_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SILO_THREAD_ANNOTATION(x)
#endif

#define GUARDED_BY(x) SILO_THREAD_ANNOTATION(guarded_by(x))
#define REQUIRES(...) SILO_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SILO_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
