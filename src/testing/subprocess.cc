#include "testing/subprocess.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <fstream>
#include <map>
#include <optional>
#include <csignal>
#include <thread>

#include "base/mutex.h"

extern char** environ;

namespace silo::testing {
namespace {

// Reaps every child of this process (and, as subreaper, every orphaned descendant) and
// keeps their wait statuses for run_command(). Lives until the process exits.
class ChildReaper {
 public:
  static ChildReaper& instance() {
    static ChildReaper* reaper = new ChildReaper();  // never destroyed: its thread runs on
    return *reaper;
  }

  // The wait status of `pid`, or nullopt past `deadline`.
  std::optional<int> wait(pid_t pid, std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mutex_);
    while (!exited_.contains(pid)) {
      if (lock.wait_until(exited_cv_, deadline) == std::cv_status::timeout && !exited_.contains(pid)) {
        return std::nullopt;
      }
    }
    const int status = exited_[pid];
    exited_.erase(pid);
    return status;
  }

 private:
  ChildReaper() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (pid > 0) {
        MutexLock lock(mutex_);
        exited_[pid] = status;
        exited_cv_.notify_all();
      } else if (errno == ECHILD) {
        // No child right now: poll until the next command starts one.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }

  Mutex mutex_;
  std::condition_variable exited_cv_;
  std::map<pid_t, int> exited_ GUARDED_BY(mutex_);
};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::vector<std::string> child_environment(const CommandOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool is_dropped = false;
    for (const auto& prefix : options.unset_prefixes) is_dropped |= starts_with(name, prefix);
    for (const auto& [key, value] : options.env) is_dropped |= name == key;
    if (!is_dropped) env.emplace_back(entry);
  }
  for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
  return env;
}

}  // namespace

Result<int> run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  if (argv.empty()) return Status::invalid_argument("run_command needs a program");
  ChildReaper& reaper = ChildReaper::instance();
  // Everything the child needs is built before fork(): only async-signal-safe calls after.
  std::vector<std::string> env = child_environment(options);
  std::vector<char*> argv_ptrs;
  for (const auto& a : argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (auto& e : env) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  const std::string output = options.output_path.empty() ? "/dev/null" : options.output_path;
  const int out_fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) return Status::from_errno(errno, "open " + output);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    ::execvpe(argv_ptrs[0], argv_ptrs.data(), env_ptrs.data());
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(out_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) return Status::from_errno(fork_errno, "fork");

  const auto status = reaper.wait(pid, std::chrono::steady_clock::now() + options.timeout);
  if (!status) {
    ::kill(pid, SIGKILL);
    std::ignore = reaper.wait(pid, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    return Status::deadline_exceeded("{} did not finish within {} ms (output: {})", argv[0],
                                     options.timeout.count(), output);
  }
  if (WIFEXITED(*status)) return WEXITSTATUS(*status);
  return 128 + WTERMSIG(*status);
}

bool is_running(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace silo::testing
