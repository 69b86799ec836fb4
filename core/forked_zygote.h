// A function zygote forked inside a runtime zygote's sandbox (issue 19, section 3), sealed
// from outside: given its own /proc, /code, /tmp, /dev/shm, loopback, id maps and user
// namespace limits before any of its tenant's code runs. Parent side.
//
// The runtime sandbox (launched by core::Launch with Spec::function_zygotes > 0) has user
// namespace R. Its agent forks a child that calls
// unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
// CLONE_NEWUTS) and forks again; that grandchild Z is pid 1 of the new pid namespace, in
// the new user namespace F (a child of R) with no id maps yet, and in a copy of the runtime
// sandbox's mounts. Z waits; the supervisor calls SealForkedZygote, then tells Z to go on
// (Z then drops its capabilities and stacks BuildFunctionZygoteSealFilter's filter and a
// Landlock domain of its own).
#ifndef ZYGO_CORE_FORKED_ZYGOTE_H_
#define ZYGO_CORE_FORKED_ZYGOTE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/userns_limits.h"

namespace zygo::core {

struct ForkedZygoteTarget {
  pid_t runtime_init = 0;  // the runtime sandbox's first process: its user namespace is R
  int runtime_init_pidfd = -1;
  pid_t zygote = 0;  // Z, in the caller's pid namespace
  int zygote_pidfd = -1;
};

struct ForkedZygoteOptions {
  // The function's code: an absolute host path with no symlink in it (realpath'd by the
  // caller), mounted read-only, nosuid, nodev (and private) at /code.
  std::string code_dir;
  // What the caller found at code_dir (stat): refused if the path now names another file,
  // or has a symlink in it, as core's checked binds refuse a swapped volume.
  uint64_t code_dev = 0;
  uint64_t code_ino = 0;
  // Z's own /tmp and /dev/shm: tmpfs, mode 1777, nosuid, nodev, an inode per 4 KiB.
  int64_t tmp_bytes = 64LL << 20;
  int64_t shm_bytes = 64LL << 20;
  // Z's gid as R sees it. It and Z's uid (F's owner: the uid Z's parent had in R when it
  // unshared, the only uid Z can have) are mapped one to one into F.
  uint32_t gid = 0;
  // Written as F's own limits (DefaultUsernsLimits: each a /proc/sys/user file).
  std::vector<UsernsLimit> userns_limits;
};

// Seals Z. Parent side: any thread of the caller, which must own R (have made it, root or
// not) and see Z, R's init and /proc/sys/user in its own /proc. Needs from the host: a
// fully visible proc in the caller's mount namespace (as every launch does), and the
// mount API (Linux 5.2; mount_setattr 5.12).
//
// Refuses, with FailedPrecondition naming what is wrong and nothing written or mounted,
// unless F is a user namespace made directly in R; Z's mount, pid, net, ipc and uts
// namespaces are all F's; Z is pid 1 of its pid namespace, which was made directly in
// R's init's; both pidfds are alive after the namespace files were opened (a reused pid);
// and code_dir still resolves, without symlinks, to code_dev/code_ino.
//
// Then, in a helper child that shares no credentials with the caller's threads
// (core/internal/namespace_helper.h): joins R (every capability in R); makes a mount
// namespace of its own, a copy of the caller's owned by R in which nothing is mounted,
// and clones code_dir there as the caller's own uid (so a swapped code_dir is refused
// before anything is written); becomes F's owner (every capability in F); makes Z's
// tmpfs; writes Z's uid and gid maps; and from a child of its own in Z's pid namespace
// makes a proc of that namespace (the kernel refuses one made inside Z's mount namespace,
// whose /proc has locked masks over it: mount_too_revealing), joins Z's mount namespace
// and mounts, in this order, that proc on /proc with kMaskedProcPaths and
// kReadOnlyProcPaths over it, code_dir on /code, a tmpfs on /tmp and on /dev/shm; then
// joins Z's net namespace and sets lo up. Last, the helper joins F and writes F's
// userns_limits. Every mount is private; nothing is mounted in R's mount namespace or the
// caller's. Takes about 3-10 ms (a busy 2-core VM).
//
// A failure after the checks leaves Z half sealed (it may have its maps, or a /proc): the
// caller must kill it and never let it go on. Around a success the caller moves Z into
// its function's cgroup before Z goes on (Z was born in the runtime's; pages of its tmpfs
// are charged to whoever writes them), then tells Z to go on. Z then unshares its cgroup
// namespace (the runtime allowlist lets CLONE_NEWCGROUP through; the seal filter does
// not), drops every capability, and stacks the seal filter and a Landlock domain.
absl::Status SealForkedZygote(const ForkedZygoteTarget& target, const ForkedZygoteOptions& options);

}  // namespace zygo::core

#endif  // ZYGO_CORE_FORKED_ZYGOTE_H_
