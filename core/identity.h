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
  // What uid/gid map to outside: the caller's own ids; as root, the same ids (-u 1000 is
  // host uid 1000, as in docker), with 0 also mapped to 0 so the setup (which runs as the
  // caller) and the image's root-owned files keep an owner inside.
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
  bool map_root_too = false;  // root caller, uid or gid not 0: a second line maps 0 to 0
  // Root may write a gid_map without denying setgroups, so the child can clear the
  // caller's supplementary groups. Rootless callers must deny setgroups instead.
  bool can_setgroups = false;
};

// Parent side: rootless, the caller's ids mapped to `uid`/`gid` inside; as root, `uid`
// and `gid` mapped to themselves.
IdentityPlan BuildIdentityPlan(uint32_t uid, uint32_t gid);

// Parent side, while the child waits: writes /proc/<pid>/{uid_map,setgroups,gid_map}.
absl::Status WriteIdMapsFromParent(pid_t pid, const IdentityPlan& plan);

// Child side: clears supplementary groups (when allowed) and sets the ids.
ChildFailure SetIdsInChild(const IdentityPlan& plan);

// Child side, before SetIdsInChild: empties the capability bounding set. It needs
// CAP_SETPCAP, which a change from uid 0 to another uid takes away (capabilities(7)).
ChildFailure DropBoundingSetInChild();

// Child side, last before Landlock and seccomp: empties the ambient, inheritable,
// permitted and effective sets (lowering needs no capability), then sets no_new_privs.
ChildFailure DropPrivilegesInChild();

}  // namespace zygo::core

#endif  // ZYGO_CORE_IDENTITY_H_
