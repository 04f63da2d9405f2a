#pragma once

// The one entry point to spdlog (STYLE.md 2.2 rule 4). Messages use fmt syntax.
#ifndef SPDLOG_ACTIVE_LEVEL
#define SPDLOG_ACTIVE_LEVEL SPDLOG_LEVEL_DEBUG
#endif
#include <spdlog/spdlog.h>

#include <string_view>

#include "base/status.h"

namespace silo::log {

// Sets up the process logger: `level` is trace|debug|info|warn|error; `node_id` prefixes
// every line so the logs of a local cluster can be merged. Logs go to stderr.
Status init(std::string_view level, std::string_view node_id);

}  // namespace silo::log

#define SILO_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define SILO_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define SILO_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define SILO_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
