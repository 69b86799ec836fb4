// Asks systemd for a transient scope with Delegate=yes holding a process, over D-Bus
// (sd-bus), as the systemd cgroup drivers of podman, runc and crun do: on a systemd host
// this is how a process that shares its cgroup (a login session, a terminal) gets a
// cgroup subtree of its own. Linked only into the zygo-scope helper.
#ifndef ZYGO_CORE_INTERNAL_SYSTEMD_SCOPE_H_
#define ZYGO_CORE_INTERNAL_SYSTEMD_SCOPE_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/internal/systemd_manager.h"

namespace zygo::core::internal {

// Starts the transient scope request.unit with request.pid in it, Delegate=yes, and waits
// up to `timeout` for systemd to finish the job, after which the process is in the
// scope's cgroup. Once that process exits, the scope is empty and systemd removes it with
// the cgroups below it. Unavailable when the manager cannot be reached or refuses; the
// job's own result when it is not "done".
absl::Status StartDelegatedScope(const SystemdScopeRequest& request, absl::Duration timeout);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_SYSTEMD_SCOPE_H_
