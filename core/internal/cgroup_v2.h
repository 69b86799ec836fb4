// The cgroup v2 driver: one directory per sandbox where its placement says, held open so
// that clone3(CLONE_INTO_CGROUP) starts the child inside it.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_V2_H_
#define ZYGO_CORE_INTERNAL_CGROUP_V2_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cgroup.h"
#include "core/internal/cgroup_v2_placement.h"

namespace zygo::core::internal {

// The path of the v2 line ("0::/path") of a /proc/<pid>/cgroup file; NotFound without
// one, InvalidArgument when it is malformed.
absl::StatusOr<std::string> ParseV2SelfCgroup(absl::string_view content);

// True when `root` is a cgroup2 mount (statfs f_type CGROUP2_SUPER_MAGIC). A directory
// that is not a cgroup mount of either version counts too when it has
// cgroup.controllers at its top: on a real host only a cgroup2 root has that file
// (a hybrid host's /sys/fs/cgroup is a tmpfs without it), and it lets unit tests
// build fake trees. Parent side; reads only.
bool IsCgroup2Root(const std::string& root);

class CgroupV2Driver : public CgroupDriver {
 public:
  // `plan`: from PlanV2Placement(options); options.name_prefix must not contain '/'.
  CgroupV2Driver(V2PlacementPlan plan, CgroupProbeOptions options);

  CgroupVersion version() const override { return CgroupVersion::kV2; }
  const CgroupPlacement& placement() const override { return placement_.placement(); }
  absl::Status Prepare() override { return placement_.Prepare(); }

  // Prepare()s, enables +memory +pids +cpu in the parent's cgroup.subtree_control when
  // they are not enabled yet, mkdirs "<prefix><pid>-<n>", writes the limits (a zero field
  // leaves that controller at "max") and opens the directory for clone_into_fd().
  absl::StatusOr<std::unique_ptr<Cgroup>> Create(const CgroupLimits& limits) override;

  // Beside where Create makes cgroups (nothing before a systemd scope is started).
  std::vector<StaleCgroup> SweepStale(const StaleSweepOptions& options) override;

  // Where Create makes cgroups ("" before Prepare() for a systemd scope).
  const std::string& parent_dir() const { return placement_.placement().parent_dir; }

 private:
  std::string name_prefix_;
  std::string mount_root_;
  V2Placement placement_;  // last: undone before anything else of the driver goes
};

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_V2_H_
