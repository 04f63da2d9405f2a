#include "cluster/cluster_maps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace silo::cluster {
namespace {

constexpr const char* kNodeMapFile = "node_map.pb";
constexpr const char* kBucketMapFile = "bucket_map.pb";


template <typename Message>
Result<std::optional<Message>> read_persisted(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<Message>();
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto decoded = wire::decode<Message>(buffer.str(), wire::Source::kDisk);
  if (!decoded) return std::move(decoded).error().annotate("read {}", path);
  return std::optional<Message>(std::move(*decoded));
}

Status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "open " + path);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::from_errno(err, "fsync " + path);
  return Status::ok();
}

}  // namespace

bool stores_objects(const wire::NodeInfo& n) {
  return n.role() == wire::NODE_ROLE_TARGET || n.role() == wire::NODE_ROLE_ALL;
}

bool owns_objects(const wire::NodeInfo& node) {
  return stores_objects(node) && node.mode() == wire::NODE_MODE_NORMAL &&
         node.state() != wire::NODE_STATE_MAINTENANCE;
}

std::vector<std::string> owner_ids(const wire::NodeMap& map) {
  std::vector<std::string> ids;
  for (const auto& n : map.nodes()) {
    if (owns_objects(n)) ids.push_back(n.id());
  }
  return ids;
}

TargetPlacement::TargetPlacement(const wire::NodeMap& map) {
  std::vector<std::string> ids;
  std::vector<std::string> all_ids;
  for (const auto& n : map.nodes()) {
    if (!stores_objects(n)) continue;
    every_.push_back(n);
    all_ids.push_back(n.id());
    if (!owns_objects(n)) continue;
    nodes_.push_back(n);
    ids.push_back(n.id());
  }
  hrw_ = placement::HrwCandidates(std::move(ids));
  every_hrw_ = placement::HrwCandidates(std::move(all_ids));
}

std::vector<wire::NodeInfo> TargetPlacement::holders(const ObjectRef& object, size_t n) const {
  std::vector<wire::NodeInfo> out;
  for (const size_t i : hrw_.ranking(object, n)) out.push_back(nodes_[i]);
  return out;
}

std::vector<wire::NodeInfo> TargetPlacement::ranked_holders(const ObjectRef& object) const {
  std::vector<wire::NodeInfo> ranked;
  for (const size_t i : every_hrw_.ranking(object, every_.size())) ranked.push_back(every_[i]);
  return ranked;
}

Status write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return Status::from_errno(errno, "create " + tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::from_errno(err, "write " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::from_errno(err, "fsync " + tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::from_errno(errno, "rename " + tmp);
  return fsync_path(std::filesystem::path(path).parent_path().string(), O_RDONLY | O_DIRECTORY);
}

Result<std::unique_ptr<ClusterMaps>> ClusterMaps::open(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return Status::unavailable("create {}: {}", state_dir, ec.message());
  std::unique_ptr<ClusterMaps> maps(new ClusterMaps(state_dir));
  ASSIGN_OR_RETURN(auto node_map, read_persisted<wire::NodeMap>(state_dir + "/" + kNodeMapFile));
  ASSIGN_OR_RETURN(auto bucket_map, read_persisted<wire::BucketMap>(state_dir + "/" + kBucketMapFile));
  MutexLock lock(maps->mutex_);
  maps->node_map_ = std::make_shared<const wire::NodeMap>(node_map.value_or(wire::NodeMap()));
  maps->placement_ = std::make_shared<const TargetPlacement>(*maps->node_map_);
  wire::BucketMap empty_buckets;
  empty_buckets.set_next_bucket_id(1);
  maps->bucket_map_ = std::make_shared<const wire::BucketMap>(bucket_map.value_or(empty_buckets));
  return maps;
}

std::shared_ptr<const wire::NodeMap> ClusterMaps::node_map() const {
  MutexLock lock(mutex_);
  return node_map_;
}

std::shared_ptr<const wire::BucketMap> ClusterMaps::bucket_map() const {
  MutexLock lock(mutex_);
  return bucket_map_;
}

std::shared_ptr<const TargetPlacement> ClusterMaps::placement() const {
  MutexLock lock(mutex_);
  return placement_;
}

std::optional<wire::Bucket> ClusterMaps::find_bucket(std::string_view name) const {
  const auto map = bucket_map();
  for (const auto& b : map->buckets()) {
    if (b.name() == name) return b;
  }
  return std::nullopt;
}

std::optional<wire::NodeInfo> ClusterMaps::find_node(std::string_view id) const {
  const auto map = node_map();
  for (const auto& n : map->nodes()) {
    if (n.id() == id) return n;
  }
  return std::nullopt;
}

Result<bool> ClusterMaps::install(const wire::NodeMap& map) {
  {
    MutexLock lock(mutex_);
    if (map.version() <= node_map_->version()) return false;
    // Persist before installing, under the lock, so the file never holds an older map
    // than the one being served.
    RETURN_IF_ERROR(write_file_atomically(state_dir_ + "/" + kNodeMapFile, wire::encode(map)));
    node_map_ = std::make_shared<const wire::NodeMap>(map);
    placement_ = std::make_shared<const TargetPlacement>(map);
  }
  notify();
  return true;
}

Result<bool> ClusterMaps::install(const wire::BucketMap& map) {
  {
    MutexLock lock(mutex_);
    if (map.version() <= bucket_map_->version()) return false;
    RETURN_IF_ERROR(write_file_atomically(state_dir_ + "/" + kBucketMapFile, wire::encode(map)));
    bucket_map_ = std::make_shared<const wire::BucketMap>(map);
  }
  notify();
  return true;
}

void ClusterMaps::on_change(std::function<void()> listener) {
  MutexLock lock(mutex_);
  listeners_.push_back(std::move(listener));
}

void ClusterMaps::notify() {
  std::vector<std::function<void()>> listeners;
  {
    MutexLock lock(mutex_);
    listeners = listeners_;
  }
  for (const auto& l : listeners) l();
}

}  // namespace silo::cluster
