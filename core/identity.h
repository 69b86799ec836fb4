// Who the sandboxed program is: the user namespace's id maps (written by the parent),
// then the ids, capabilities and no_new_privs the child settles on before exec.
#ifndef ZYGO_CORE_IDENTITY_H_
#define ZYGO_CORE_IDENTITY_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/child_failure.h"

namespace zygo::core {

struct IdentityPlan {
  uint32_t uid = 0;  // inside the sandbox
  uint32_t gid = 0;
  uint32_t host_uid = 0;  // what uid/gid map to outside: the caller's own ids
  uint32_t host_gid = 0;
  // Root may write a gid_map without denying setgroups, so the child can clear the
  // caller's supplementary groups. Rootless callers must deny setgroups instead.
  bool can_setgroups = false;
};

// Parent side: the caller's ids mapped to `uid`/`gid` inside.
IdentityPlan BuildIdentityPlan(uint32_t uid, uint32_t gid);

// Parent side, while the child waits: writes /proc/<pid>/{uid_map,setgroups,gid_map}.
absl::Status WriteIdMapsFromParent(pid_t pid, const IdentityPlan& plan);

// Child side: clears supplementary groups (when allowed) and sets the ids.
ChildFailure SetIdsInChild(const IdentityPlan& plan);

// Child side, last before Landlock and seccomp: empties the bounding, ambient,
// inheritable, permitted and effective sets, then sets no_new_privs.
ChildFailure DropPrivilegesInChild();

}  // namespace zygo::core

#endif  // ZYGO_CORE_IDENTITY_H_
