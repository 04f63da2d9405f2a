#pragma once

// Tar shards for the tests of member reads and batch GET: one made in memory, the members
// of an answer, a batch GET read whole.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "client/client.h"
#include "wire/batch_json.h"

namespace silo::integration {

using Members = std::vector<std::pair<std::string, std::string>>;  // name, bytes; in order

inline std::string tar_of(const Members& members) {
  std::string out;
  for (const auto& [name, bytes] : members) {
    out += archive::tar_header(name, bytes.size(), 1'760'000'000) + bytes + archive::tar_padding(bytes.size());
  }
  return out + archive::tar_end();
}

// The members of a tar answer, in order (a test failure when it is not a whole tar).
inline Members members_of(const std::string& tar) {
  auto index = archive::index_tar(archive::read_bytes(tar), tar.size());
  EXPECT_TRUE(index) << index.status();
  Members out;
  if (!index) return out;
  for (const auto& m : index->members()) out.emplace_back(m.name(), tar.substr(m.offset(), m.size()));
  return out;
}

// The tar stream of a batch GET, read whole.
inline Result<std::string> get_batch(client::Client& c, const wire::BatchRequest& request) {
  std::string out;
  RETURN_IF_ERROR(c.get_batch(request, [&out](std::span<const char> data) {
                     out.append(data.data(), data.size());
                     return Status::ok();
                   })
                      .status());
  return out;
}

}  // namespace silo::integration
