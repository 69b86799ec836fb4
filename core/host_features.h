// What the running kernel and host offer a sandbox, asked once per process in one place:
// the plan (Landlock), the cgroup driver's choice and `zygo doctor` read the answers here
// instead of each asking again.
#ifndef ZYGO_CORE_HOST_FEATURES_H_
#define ZYGO_CORE_HOST_FEATURES_H_

#include "core/cgroup.h"

namespace zygo::core {

// How the kernel answers a syscall that is asked with arguments it must reject (so that
// nothing is made): the rejection itself (EINVAL, E2BIG, EBADF) says it is there.
enum class SyscallState {
  kAvailable,
  kNoSys,    // ENOSYS: not in this kernel, or a seccomp filter says so (docker's clone3)
  kRefused,  // EPERM: a seccomp filter refuses it before the kernel sees the arguments
};

struct HostFeatures {
  SyscallState clone3 = SyscallState::kNoSys;  // Linux 5.3
  // CLONE_INTO_CGROUP (Linux 5.7): a child born in its cgroup. False without clone3.
  bool clone_into_cgroup = false;
  SyscallState mount_setattr = SyscallState::kNoSys;  // Linux 5.12
  int landlock_abi = 0;  // 0: no Landlock (not built, not enabled at boot, or filtered)
  CgroupFacts cgroup;    // of /sys/fs/cgroup
};

// The host's features, asked on the first call and kept for the life of the process; any
// thread may call it, concurrently. Parent side (the first call allocates). Needs nothing:
// every question fails in the kernel or only reads, so no namespace, cgroup or process is
// made and nothing is left behind.
const HostFeatures& ProbeHostFeatures();

// The same questions asked again, uncached: what ProbeHostFeatures() keeps (for tests).
HostFeatures ReadHostFeatures();

// The cgroup facts of the tree at options.mount_root and options.systemd_marker, uncached:
// the host's for the default options, a fake tree's in unit tests. Reads only.
CgroupFacts ReadCgroupFacts(const CgroupProbeOptions& options);

}  // namespace zygo::core

#endif  // ZYGO_CORE_HOST_FEATURES_H_
