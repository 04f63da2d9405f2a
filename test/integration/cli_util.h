#pragma once

// Runs this build's `silo` CLI as a user's script does (a subprocess with SILO_* set),
// for the tests of the CLI (cli_test.cc, config_test.cc).
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "testing/local_cluster.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

#ifndef SILO_CLI_PATH
#error "SILO_CLI_PATH must be defined by the build (the silo binary)"
#endif

namespace silo::integration {

using silo::testing::EnvVars;

// Exit codes (docs/cli.md "Exit codes").
inline constexpr int kOk = 0, kError = 1, kUsage = 2, kNotFound = 3, kAuth = 4, kUnreachable = 5,
              kUnsupported = 6;

struct CliResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::ostream& operator<<(std::ostream& os, const CliResult& r) {
  return os << "exit " << r.code << "\n--- stdout:\n"
            << r.out.substr(0, 3000) << "\n--- stderr:\n"
            << r.err.substr(0, 3000);
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline std::string read_or(const std::string& path, std::string fallback) {
  auto text = silo::testing::read_file(path);
  return text.has_value() ? std::move(*text) : fallback;
}

inline std::string cli_path() {
  if (const char* path = std::getenv("SILO_TEST_CLI"); path != nullptr && *path != '\0')
    return path;
  return SILO_CLI_PATH;
}

// Runs `silo ARGS` with SILO_ENDPOINT/keys of `endpoint` (unless `env` overrides them)
// and stdin from `stdin_path` (/dev/null by default).
class Cli {
 public:
  explicit Cli(std::string endpoint) : endpoint_(std::move(endpoint)) {
    auto dir = silo::testing::TempDir::create("silo-cli");
    EXPECT_TRUE(dir.has_value());
    dir_ = std::make_unique<silo::testing::TempDir>(std::move(*dir));
  }
  const std::string& dir() const { return dir_->path(); }

  CliResult run(const std::vector<std::string>& args, EnvVars env = {},
                const std::string& stdin_path = "/dev/null") {
    std::string command = "exec " + shell_quote(cli_path());
    for (const auto& a : args) command += " " + shell_quote(a);
    const std::string out = dir() + "/stdout", err = dir() + "/stderr";
    command += " <" + shell_quote(stdin_path) + " >" + shell_quote(out) + " 2>" + shell_quote(err);
    silo::testing::CommandOptions options;
    options.unset_prefixes = {"SILO_"};
    options.env = {{"SILO_ENDPOINT", endpoint_},
                   {"SILO_ACCESS_KEY", "silo-admin"},
                   {"SILO_SECRET_KEY", "silo-secret-key"},
                   {"HOME", dir()}};  // no developer's ~/.config/silo/config.json
    for (const auto& entry : env) {  // not a structured binding: clang 14 cannot capture one
      const auto& key = entry.first;
      std::erase_if(options.env, [&key](const auto& e) { return e.first == key; });
      options.env.emplace_back(entry.first, entry.second);
    }
    options.timeout = std::chrono::milliseconds(180000);
    CliResult r;
    auto code = silo::testing::run_command({"sh", "-c", command}, options);
    EXPECT_TRUE(code.has_value()) << code.status();
    r.code = code.has_value() ? *code : -1;
    r.out = read_or(out, "");
    r.err = read_or(err, "");
    return r;
  }

 private:
  std::string endpoint_;
  std::unique_ptr<silo::testing::TempDir> dir_;
};

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace silo::integration
