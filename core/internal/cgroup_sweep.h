// Finds and removes cgroups an earlier zygo made and could not remove because it was
// killed (SIGKILL leaves no chance to clean up): CgroupDriver::SweepStale for both drivers.
// Parent side.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_
#define ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/cgroup.h"

namespace zygo::core::internal {

// One hierarchy to look in (v1: one per controller's mount; v2: the one).
struct SweepHierarchy {
  std::string parent_dir;  // where the driver makes its cgroups
  std::string mount_dir;   // the hierarchy's root, walked with options.everywhere
};

// The owner pid of a top-level cgroup name "<prefix><pid>-<n>" (digits only), or nullopt
// for any other name.
std::optional<pid_t> ZygoCgroupOwner(absl::string_view name, absl::string_view prefix);

// CgroupDriver::SweepStale over `hierarchies` of cgroup `version` (a directory two of them
// share, co-mounted controllers, is looked at once). The directories of one cgroup in
// several hierarchies have one name and are reported, and removed or kept, together.
std::vector<StaleCgroup> SweepStaleCgroups(CgroupVersion version,
                                           const std::vector<SweepHierarchy>& hierarchies,
                                           const std::string& prefix,
                                           const StaleSweepOptions& options);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_
