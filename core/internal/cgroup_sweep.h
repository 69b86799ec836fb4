// Removes cgroups an earlier zygo made and could not remove because it was killed
// (SIGKILL leaves no chance to clean up). Parent side.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_
#define ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_

#include <string>

namespace zygo::core::internal {

// In `parent_dir`, removes every empty directory named "<prefix><pid>-<n>" whose zygo
// process <pid> no longer exists. Only such names are touched, and rmdir fails on a
// cgroup that still has tasks, so a live sandbox is never disturbed. Best effort.
void SweepStaleCgroups(const std::string& parent_dir, const std::string& prefix);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_SWEEP_H_
