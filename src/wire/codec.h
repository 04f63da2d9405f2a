#pragma once

// Encode and decode of every protobuf record and message (the C++ side of proto/).
// Decoders check `format_version` and reject what they do not know with kDataLoss
// (bytes from disk) or kInvalidArgument (bytes from the network): never a crash.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "bucket_map.pb.h"
#include "cluster_messages.pb.h"
#include "node_map.pb.h"
#include "object_record.pb.h"
#include "upload_record.pb.h"

namespace silo::wire {

// Current format of each record. A bump adds a compatibility note in docs/wire-format.md
// and a decoder branch for the older version.
template <typename Message>
inline constexpr uint32_t kFormat = 1;

enum class Source { kDisk, kNetwork };

// Serializes `message` after stamping its format_version.
template <typename Message>
std::string encode(Message message) {
  message.set_format_version(kFormat<Message>);
  return message.SerializeAsString();
}

template <typename Message>
Result<Message> decode(std::string_view bytes, Source source) {
  Message message;
  const Code bad = source == Source::kDisk ? Code::kDataLoss : Code::kInvalidArgument;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status(bad, "cannot parse " + message.GetTypeName());
  }
  if (message.format_version() != kFormat<Message>) {
    return Status(bad, fmt::format("{} has format version {}, this build reads {}",
                                   message.GetTypeName(), message.format_version(),
                                   kFormat<Message>));
  }
  return message;
}

std::string_view role_name(NodeRole role);
std::string_view state_name(NodeState state);
std::string_view mode_name(NodeMode mode);
std::string_view phase_name(RebalancePhase phase);
Result<NodeRole> parse_role(std::string_view name);

}  // namespace silo::wire
