// One function's per-request cgroups, made inside the function's cgroup and reused: mkdir,
// limits and rmdir for every request were most of the supervisor's own CPU under load.
// A cgroup is reused only when its request hit no limit, since pids.events and the OOM
// counters cannot be reset. Thread-safe.
#ifndef ZYGO_SUPERVISOR_REQUEST_CGROUPS_H_
#define ZYGO_SUPERVISOR_REQUEST_CGROUPS_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cgroup.h"

namespace zygo::supervisor {

class RequestCgroups {
 public:
  // At most this many empty cgroups are kept: each holds open fds.
  static constexpr size_t kMaxFree = 64;

  explicit RequestCgroups(core::CgroupLimits limits) : limits_(limits) {}
  ~RequestCgroups() { DestroyFree(); }
  RequestCgroups(const RequestCgroups&) = delete;
  RequestCgroups& operator=(const RequestCgroups&) = delete;

  // The function's cgroup, once it exists; it must outlive every cgroup Take returns.
  void SetParent(core::Cgroup* parent) { parent_ = parent; }

  // An empty cgroup with the request limits: a kept one, or a new one.
  absl::StatusOr<std::unique_ptr<core::Cgroup>> Take();
  // A request's cgroup back, once its processes are gone. Kept for the next spare when
  // `may_reuse` (the request ended by itself) and it hit no limit; otherwise destroyed.
  void Return(std::unique_ptr<core::Cgroup> cgroup, bool may_reuse);
  // Destroys kept cgroups beyond `count` (after a burst).
  void Trim(size_t count);
  void DestroyFree();

 private:
  const core::CgroupLimits limits_;
  core::Cgroup* parent_ = nullptr;
  std::mutex mu_;
  std::vector<std::unique_ptr<core::Cgroup>> free_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_REQUEST_CGROUPS_H_
