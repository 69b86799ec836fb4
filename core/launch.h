// Runs a Plan: makes the cgroup, clones the sandbox child into new namespaces, writes
// its id maps, enforces the deadline, forwards signals, and tears everything down.
// Parent side.
#ifndef ZYGO_CORE_LAUNCH_H_
#define ZYGO_CORE_LAUNCH_H_

#include <sys/types.h>

#include <functional>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/outcome.h"
#include "core/plan.h"

namespace zygo::core {

// Runs `plan` to completion and says how it ended. `driver` may be null when the host
// has no usable cgroups. Returns an error Status only when Zygo could not start the
// sandbox at all (cgroup refused, clone failed); failures inside the child come back
// as an Outcome with status setup_error. Every cgroup, pipe and process it made is
// gone when it returns.
//
// `before_release`, when set, runs in the parent after the child's id maps are written
// and before it is let go, with the child's pid: its namespaces exist but nothing runs in
// them yet (the network hookup: firewall, pasta, resolver). An error from it kills the
// child and is returned as Launch's error.
using BeforeRelease = std::function<absl::Status(pid_t pid)>;
absl::StatusOr<Outcome> Launch(const Plan& plan, CgroupDriver* driver,
                               const BeforeRelease& before_release = nullptr);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LAUNCH_H_
