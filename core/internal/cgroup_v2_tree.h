// Facts about one directory of a cgroup2 tree, and the controller switches in its
// cgroup.subtree_control: what the v2 driver and its placement read and write.
// Parent side.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_V2_TREE_H_
#define ZYGO_CORE_INTERNAL_CGROUP_V2_TREE_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::core::internal {

// memory, pids and cpu: what a sandbox's limits need.
const std::vector<std::string>& SandboxControllers();

// Those of SandboxControllers() that the space-separated `listed` lacks, in order.
std::vector<std::string> MissingControllers(absl::string_view listed);

// The controllers `dir` lacks in cgroup.controllers (what its parent hands it).
// The file's read error when it cannot be read.
absl::StatusOr<std::vector<std::string>> MissingAvailableControllers(const std::string& dir);

// True for the root cgroup of the whole hierarchy, the one cgroup exempt from the
// no-internal-process rule. It alone has no cgroup.type; a cgroup namespace's root (a
// container's "/") does have one, and the rule applies to it.
bool IsRootCgroup(const std::string& dir);

// The pids in `dir`'s cgroup.procs (its member processes, not its children's).
absl::StatusOr<std::vector<pid_t>> MemberProcesses(const std::string& dir);

// OK when this process may make cgroups in `dir`, move processes through it and switch its
// children's controllers: it may write the directory, cgroup.procs and
// cgroup.subtree_control (root, or the owner of a delegated subtree). The first refusal
// otherwise.
absl::Status CheckMayManage(const std::string& dir);

// Turns on memory, pids and cpu for `dir`'s children, writing just those not on yet (a
// parent set up by its owner is left alone); returns the ones it turned on.
// FailedPrecondition, explained, when `dir` has processes of its own (EBUSY).
absl::StatusOr<std::vector<std::string>> EnableControllers(const std::string& dir);

// Turns `controllers` off again for `dir`'s children ("-memory -pids ...").
absl::Status DisableControllers(const std::string& dir,
                                const std::vector<std::string>& controllers);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_V2_TREE_H_
