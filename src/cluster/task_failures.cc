#include "cluster/task_failures.h"

namespace silo::cluster {

void TaskFailures::fail(const Status& s) {
  count_.fetch_add(1);
  MutexLock lock(mutex_);
  last_error_ = s.to_string();
}

void TaskFailures::fail_object(const std::string& name, const Status& s) {
  fail(s);
  MutexLock lock(mutex_);
  if (failed_objects_.size() < kMaxFailedObjects) failed_objects_.push_back(name + ": " + s.message());
}

void TaskFailures::report(wire::RebalanceProgress& progress) const {
  progress.set_errors(count_.load());
  MutexLock lock(mutex_);
  progress.set_last_error(last_error_);
  for (const auto& f : failed_objects_) progress.add_failed_objects(f);
}

}  // namespace silo::cluster
