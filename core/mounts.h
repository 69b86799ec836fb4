// Builds the sandbox's root from a MountPlan and pivots into it. Child side only:
// async-signal-safe, no allocation; needs CAP_SYS_ADMIN in the sandbox's user
// namespace and its own mount namespace.
#ifndef ZYGO_CORE_MOUNTS_H_
#define ZYGO_CORE_MOUNTS_H_

#include "core/child_failure.h"
#include "core/mount_plan.h"

namespace zygo::core {

// Makes every mount private, stages a tmpfs, applies `plan.ops`, pivots into the new
// root, detaches the host's root and makes / read-only. On return the process's root
// and cwd are the sandbox's /.
ChildFailure BuildRootInChild(const MountPlan& plan);

}  // namespace zygo::core

#endif  // ZYGO_CORE_MOUNTS_H_
