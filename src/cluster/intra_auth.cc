#include "cluster/intra_auth.h"

#include <charconv>
#include <cstdlib>

#include "base/hash.h"
#include "s3/checksum.h"

namespace silo::cluster {
namespace {

constexpr int64_t kMaxSkewSeconds = 300;

std::string mac(const std::string& secret, std::string_view node_id, int64_t when, std::string_view method,
                std::string_view target) {
  const std::string text = fmt::format("silo-cluster-v1\n{}\n{}\n{}\n{}", node_id, when, method, target);
  const std::string raw = s3::hmac_sha256(secret, text);
  return hash::to_hex({reinterpret_cast<const unsigned char*>(raw.data()), raw.size()});
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

ClusterAuth::ClusterAuth(const config::AuthConfig& auth)
    // Derived from the admin secret when not set: nodes started with the same admin keys
    // agree on it, and it reveals nothing about the admin secret.
    : secret_(auth.cluster_secret.empty() ? s3::hmac_sha256(auth.admin_secret_key, "silo-cluster-secret")
                                          : auth.cluster_secret) {}

std::string ClusterAuth::sign(std::string_view node_id, std::string_view method, std::string_view target,
                              int64_t now_unix_seconds) const {
  return fmt::format("{}:{}:{}", node_id, now_unix_seconds, mac(secret_, node_id, now_unix_seconds, method, target));
}

Status ClusterAuth::verify(std::string_view value, std::string_view method, std::string_view target,
                           int64_t now_unix_seconds) const {
  const size_t first = value.find(':');
  const size_t second = first == std::string_view::npos ? first : value.find(':', first + 1);
  if (second == std::string_view::npos) return Status::unauthenticated("malformed {}", kClusterAuthHeader);
  const std::string_view node_id = value.substr(0, first);
  const std::string_view when_text = value.substr(first + 1, second - first - 1);
  int64_t when = 0;
  const auto [end, ec] = std::from_chars(when_text.data(), when_text.data() + when_text.size(), when);
  if (ec != std::errc() || end != when_text.data() + when_text.size()) {
    return Status::unauthenticated("malformed {}", kClusterAuthHeader);
  }
  if (std::llabs(now_unix_seconds - when) > kMaxSkewSeconds) {
    return Status::unauthenticated("intra-cluster request from {} is {} s off this node's clock", node_id,
                                   now_unix_seconds - when);
  }
  if (!equal_in_constant_time(value.substr(second + 1), mac(secret_, node_id, when, method, target))) {
    return Status::unauthenticated("intra-cluster request from {} has a bad signature (cluster secrets differ?)",
                                   node_id);
  }
  return Status::ok();
}

}  // namespace silo::cluster
