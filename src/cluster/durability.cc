#include "cluster/durability.h"

namespace silo::cluster {

store::Durability durability_of(const wire::Bucket& bucket, const config::ClusterConfig& config) {
  switch (bucket.props().durability()) {
    case wire::DURABILITY_FSYNC: return store::Durability::kFsync;
    case wire::DURABILITY_PAGE_CACHE: return store::Durability::kPageCache;
    default: break;
  }
  return config.durability == config::Durability::kFsync ? store::Durability::kFsync
                                                         : store::Durability::kPageCache;
}

}  // namespace silo::cluster
