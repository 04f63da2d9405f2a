#pragma once

// The process's limit on open files (RLIMIT_NOFILE): a target keeps hot objects' files
// open (store OpenFiles) besides its connections, and sizes that cache within it.
#include <cstdint>

namespace silo {

// Raises the soft limit to the hard one (best effort) and returns the soft limit then;
// UINT64_MAX when unlimited or unknown.
uint64_t raise_open_files_limit();

}  // namespace silo
