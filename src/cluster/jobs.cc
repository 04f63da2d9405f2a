#include "cluster/jobs.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cluster/cluster_maps.h"

namespace silo::cluster {
namespace {

// The job named `id` in `jobs` (const or not), or end().
template <typename Jobs>
auto find_job(Jobs& jobs, const std::string& id) {
  return std::find_if(jobs.begin(), jobs.end(), [&](const auto& j) { return j.id() == id; });
}

}  // namespace

Result<std::unique_ptr<JobRegistry>> JobRegistry::open(const std::string& state_dir) {
  std::unique_ptr<JobRegistry> registry(new JobRegistry(state_dir + "/jobs.pb"));
  std::ifstream in(registry->path_, std::ios::binary);
  if (!in) return registry;
  std::stringstream buffer;
  buffer << in.rdbuf();
  ASSIGN_OR_RETURN(wire::JobList list, wire::decode<wire::JobList>(buffer.str(), wire::Source::kDisk));
  MutexLock lock(registry->mutex_);
  for (auto& job : *list.mutable_jobs()) registry->jobs_.push_back(std::move(job));
  return registry;
}

Status JobRegistry::persist() {
  wire::JobList list;
  for (const auto& job : jobs_) {
    wire::JobInfo* saved = list.add_jobs();
    *saved = job;
    saved->clear_nodes();  // progress per node is rebuilt by whoever runs the job
  }
  return write_file_atomically(path_, wire::encode(std::move(list)));
}

Status JobRegistry::start(wire::JobInfo job) {
  MutexLock lock(mutex_);
  job.set_state("running");
  auto it = find_job(jobs_, job.id());
  if (it != jobs_.end()) {
    *it = std::move(job);
  } else {
    jobs_.push_back(std::move(job));
    if (jobs_.size() > kMaxJobs) jobs_.erase(jobs_.begin());
  }
  return persist();
}

Status JobRegistry::finish(const std::string& id, std::string state, std::string detail, int64_t now_unix_nanos) {
  MutexLock lock(mutex_);
  auto it = find_job(jobs_, id);
  if (it == jobs_.end() || it->state() != "running") return Status::ok();
  it->set_state(std::move(state));
  it->set_detail(std::move(detail));
  it->set_finished_unix_nanos(now_unix_nanos);
  return persist();
}

Status JobRegistry::checkpoint(const wire::JobInfo& job) {
  update(job);
  MutexLock lock(mutex_);
  return persist();
}

void JobRegistry::update(const wire::JobInfo& job) {
  MutexLock lock(mutex_);
  auto it = find_job(jobs_, job.id());
  if (it == jobs_.end() || it->state() != "running") return;
  const std::string state = it->state();
  const int64_t started = it->started_unix_nanos();
  *it = job;
  it->set_state(state);
  it->set_started_unix_nanos(started);
}

std::optional<wire::JobInfo> JobRegistry::find(const std::string& id) const {
  MutexLock lock(mutex_);
  auto it = find_job(jobs_, id);
  if (it == jobs_.end()) return std::nullopt;
  return *it;
}

std::vector<wire::JobInfo> JobRegistry::list() const {
  MutexLock lock(mutex_);
  return jobs_;
}

}  // namespace silo::cluster
