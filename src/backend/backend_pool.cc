#include "backend/backend_pool.h"

#include <fmt/format.h>

#include "backend/s3_backend.h"
#include "wire/json.h"

namespace silo::backend {

namespace {

const config::BackendDefaults& defaults_for(const config::ClusterConfig& cluster, const wire::BackendProps& props) {
  return props.provider() == "gs" ? cluster.cache.gs : cluster.cache.s3;
}

}  // namespace

BackendPool::BackendPool(std::shared_ptr<http::Client> client, std::shared_ptr<const config::LiveConfig> config)
    : client_(std::move(client)), config_(std::move(config)) {}

Result<std::shared_ptr<ObjectBackend>> BackendPool::make(const wire::BackendProps& props) const {
  const bool is_gcs = props.provider() == "gs";
  if (!is_gcs && props.provider() != "s3") {
    return Status::invalid_argument("unknown backend provider '{}'", props.provider());
  }
  const auto cluster = config_->get();
  const config::BackendDefaults& fallback = defaults_for(*cluster, props);
  const auto pick = [](const std::string& own, const std::string& other) { return own.empty() ? other : own; };
  S3Options options;
  options.bucket = props.bucket();
  options.region = pick(props.region(), fallback.region);
  if (options.region.empty()) options.region = is_gcs ? "auto" : "us-east-1";
  options.endpoint_url = pick(props.endpoint(), fallback.endpoint);
  if (options.endpoint_url.empty()) {
    // Path-style requests work on both public endpoints; GCS's XML API takes SigV4 with
    // HMAC keys.
    options.endpoint_url =
        is_gcs ? "https://storage.googleapis.com" : fmt::format("https://s3.{}.amazonaws.com", options.region);
  }
  options.access_key = pick(props.access_key(), fallback.access_key);
  options.secret_key = pick(props.secret_key(), fallback.secret_key);
  ASSIGN_OR_RETURN(auto made, S3Backend::create(client_, std::move(options)));
  return std::shared_ptr<ObjectBackend>(std::move(made));
}

Result<std::shared_ptr<ObjectBackend>> BackendPool::get(const wire::Bucket& bucket) {
  if (!wire::is_remote(bucket.props())) {
    return Status::invalid_argument("bucket {} has no backend", bucket.name());
  }
  std::string fingerprint;
  bucket.props().backend().SerializeToString(&fingerprint);
  {
    const auto cluster = config_->get();
    const config::BackendDefaults& d = defaults_for(*cluster, bucket.props().backend());
    for (const std::string* part : {&d.endpoint, &d.region, &d.access_key, &d.secret_key}) {
      fingerprint += '\0' + *part;
    }
  }
  MutexLock lock(mutex_);
  Entry& entry = by_bucket_id_[bucket.id()];
  if (!entry.backend || entry.fingerprint != fingerprint) {
    ASSIGN_OR_RETURN(entry.backend, make(bucket.props().backend()));
    entry.fingerprint = std::move(fingerprint);
  }
  return entry.backend;
}

}  // namespace silo::backend
