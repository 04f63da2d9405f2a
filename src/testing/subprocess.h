#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace silo::testing {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct CommandOptions {
  EnvVars env;                      // set on top of this process's environment
  std::vector<std::string> unset_prefixes;  // inherited variables starting so are dropped
  std::string output_path;          // stdout and stderr are appended here
  std::chrono::milliseconds timeout{120000};  // then the command is killed
};

// Runs argv[0] (looked up in PATH) and waits for it. Returns its exit code (128+signal
// when killed); kDeadlineExceeded past the timeout. The first call makes this process a
// child subreaper with a reaper thread, so daemons that the command leaves behind are
// reaped here once they exit instead of lingering as zombies (this machine's pid 1 does
// not reap: a zombie would look alive to `kill -0`).
Result<int> run_command(const std::vector<std::string>& argv, const CommandOptions& options);

// True while `pid` exists and is not a zombie (reads /proc/PID/stat).
bool is_running(pid_t pid);

}  // namespace silo::testing
