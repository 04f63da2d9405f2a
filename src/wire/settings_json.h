#pragma once

// The `silo` CLI's settings file: its one codec (a decoder; people write the file).
#include <string>
#include <string_view>

#include "base/result.h"

namespace silo::wire {

// A client settings file (the CLI's ~/.config/silo/config.json): {"endpoint",
// "access_key", "secret_key"}, each optional (null counts as absent); unknown keys are
// ignored. kInvalidArgument when it is not a JSON object or a value is not a string.
struct ClientSettings {
  std::string endpoint;
  std::string access_key;
  std::string secret_key;
  bool operator==(const ClientSettings&) const = default;
};
Result<ClientSettings> parse_client_settings_json(std::string_view text);

}  // namespace silo::wire
