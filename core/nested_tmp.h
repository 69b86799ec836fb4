// A warm spare's own /tmp: a fresh tmpfs mounted, from outside the sandbox, over /tmp in
// the spare's own mount namespace. The spare made that namespace itself (with a user
// namespace of its own, unshare(CLONE_NEWUSER | CLONE_NEWNS)) before it announced itself;
// its seccomp filter and Landlock domain refuse it any mount, so the supervisor does it.
// Parent side.
#ifndef ZYGO_CORE_NESTED_TMP_H_
#define ZYGO_CORE_NESTED_TMP_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"

namespace zygo::core {

struct NestedTmpTarget {
  pid_t sandbox_init = 0;  // the sandbox's first process: its user namespace is the sandbox's
  int sandbox_init_pidfd = -1;
  pid_t spare = 0;  // in the caller's pid namespace
  int spare_pidfd = -1;
};

struct NestedTmpOptions {
  int64_t size_bytes = 64LL << 20;  // the tmpfs's size; its pages are charged to the writer
  // The spare's gid as its sandbox's user namespace sees it. It and the spare's uid (its
  // user namespace's owner) are mapped one to one into the spare's own namespace, so its
  // files and getuid() read as before.
  uint32_t gid = 0;
};

// Checks that `target.spare` lives in a user namespace made directly in the sandbox's and
// in a mount namespace of that user namespace's own (else a spare that did not unshare
// would have its zygote's /tmp covered), then mounts a tmpfs (mode 1777, nosuid, nodev,
// `options.size_bytes`) on its /tmp, writes its uid and gid maps, and sets its user
// namespace's max_user_namespaces to 0 (its request can make none). Both pidfds are
// checked alive after the namespace files are opened, so a reused pid is refused. Runs the
// mounting in a short-lived child that shares no credentials with the caller's threads.
absl::Status MountOwnTmp(const NestedTmpTarget& target, const NestedTmpOptions& options);

}  // namespace zygo::core

#endif  // ZYGO_CORE_NESTED_TMP_H_
