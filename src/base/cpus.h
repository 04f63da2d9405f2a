#pragma once

// How many CPUs this process may use: what sizes thread pools that should match the
// machine (a node's network threads, docs/configuration.md "io_threads").
#include <cstdint>
#include <optional>
#include <string_view>

namespace silo::cpus {

// The CPUs this process may run on (its affinity mask: a container's cpuset), at most
// the cgroup v2 CPU quota rounded up (`cpu.max`, a Kubernetes CPU limit); at least 1.
uint32_t usable();

// The quota in `cpu.max`'s text ("max 100000" or "QUOTA PERIOD"), in CPUs rounded up;
// nullopt without a quota or for text it cannot read.
std::optional<uint32_t> quota_of(std::string_view cpu_max);

}  // namespace silo::cpus
