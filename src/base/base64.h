#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace silo::base64 {

std::string encode(std::span<const unsigned char> bytes);
// Standard alphabet with padding; kInvalidArgument on anything else.
Result<std::string> decode(std::string_view text);

}  // namespace silo::base64
