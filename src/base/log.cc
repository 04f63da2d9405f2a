#include "base/log.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace silo::log {

Status init(std::string_view level, std::string_view node_id) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return Status::invalid_argument("unknown log level '{}' (use trace|debug|info|warn|error)",
                                    level);
  }
  auto logger = spdlog::stderr_logger_mt(fmt::format("silo-{}", node_id));
  logger->set_pattern(fmt::format("%Y-%m-%dT%H:%M:%S.%e %L {} %v", node_id));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::flush_every(std::chrono::seconds(1));
  return Status::ok();
}

}  // namespace silo::log
