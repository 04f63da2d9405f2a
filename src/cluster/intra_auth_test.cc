#include "cluster/intra_auth.h"

#include <gtest/gtest.h>

namespace silo::cluster {
namespace {

TEST(ClusterAuthTest, SignsAndChecksRequests) {
  config::AuthConfig config;
  const ClusterAuth auth(config);
  const std::string value = auth.sign("t1", "GET", "/v1/internal/list/b?limit=1", 1000);
  EXPECT_TRUE(auth.verify(value, "GET", "/v1/internal/list/b?limit=1", 1000).is_ok());
  EXPECT_TRUE(auth.verify(value, "GET", "/v1/internal/list/b?limit=1", 1299).is_ok());
  EXPECT_EQ(auth.verify(value, "GET", "/v1/internal/list/b?limit=1", 1301).code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.verify(value, "PUT", "/v1/internal/list/b?limit=1", 1000).code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.verify(value, "GET", "/v1/internal/list/c?limit=1", 1000).code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.verify("garbage", "GET", "/", 1000).code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.verify("t1:x:y", "GET", "/", 1000).code(), Code::kUnauthenticated);
}

TEST(ClusterAuthTest, SecretsMustAgree) {
  config::AuthConfig a;
  config::AuthConfig b;
  b.admin_secret_key = "another-admin-secret";
  const std::string value = ClusterAuth(a).sign("p1", "POST", "/v1/internal/metasync", 5);
  EXPECT_EQ(ClusterAuth(b).verify(value, "POST", "/v1/internal/metasync", 5).code(), Code::kUnauthenticated);
  config::AuthConfig explicit_secret = b;
  explicit_secret.cluster_secret = "shared";
  config::AuthConfig other = a;
  other.cluster_secret = "shared";
  const std::string shared = ClusterAuth(explicit_secret).sign("p1", "GET", "/x", 5);
  EXPECT_TRUE(ClusterAuth(other).verify(shared, "GET", "/x", 5).is_ok());
}

}  // namespace
}  // namespace silo::cluster
