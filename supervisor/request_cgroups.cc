#include "supervisor/request_cgroups.h"

#include <utility>

namespace zygo::supervisor {

absl::StatusOr<std::unique_ptr<core::Cgroup>> RequestCgroups::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<core::Cgroup> reused = std::move(free_.back());
      free_.pop_back();
      return reused;
    }
  }
  if (parent_ == nullptr) return absl::FailedPreconditionError("the function has no cgroup");
  return parent_->CreateChild(limits_, "request-");
}

void RequestCgroups::Return(std::unique_ptr<core::Cgroup> cgroup, bool may_reuse) {
  if (!cgroup) return;
  if (may_reuse) {
    // Asked now that it is empty, so no late fork or allocation of its last request can
    // leave a count behind for the next one to be blamed for.
    absl::StatusOr<core::CgroupUsage> hits = cgroup->ReadLimitHits();
    may_reuse =
        hits.ok() && hits->oom_kills == 0 && hits->pids_max_hits == 0 && cgroup->ResetPeak().ok();
  }
  if (may_reuse) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxFree) {
      free_.push_back(std::move(cgroup));
      return;
    }
  }
  cgroup->Destroy().IgnoreError();
}

void RequestCgroups::Trim(size_t count) {
  std::vector<std::unique_ptr<core::Cgroup>> unused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (free_.size() > count) {
      unused.push_back(std::move(free_.back()));
      free_.pop_back();
    }
  }
  for (auto& cgroup : unused) cgroup->Destroy().IgnoreError();
}

void RequestCgroups::DestroyFree() { Trim(0); }

}  // namespace zygo::supervisor
