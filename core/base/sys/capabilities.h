// Capability sets of the calling thread, through raw syscalls: async-signal-safe, and safe
// in a child that shares its parent's memory. Each returns 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_CAPABILITIES_H_
#define ZYGO_CORE_BASE_SYS_CAPABILITIES_H_

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::base::sys {

// Empties the bounding set (needs CAP_SETPCAP). On failure `*failed_cap` names the one.
inline int RawDropBoundingSet(int* failed_cap) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      *failed_cap = cap;
      return -errno;
    }
  }
  return 0;
}

// Empties the effective, permitted and inheritable sets (lowering needs no capability).
inline int RawClearCapabilities() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  return ::syscall(SYS_capset, &header, none) == 0 ? 0 : -errno;
}

// Raises the effective set to the permitted one (after a uid change under PR_SET_KEEPCAPS).
inline int RawRaiseEffectiveToPermitted() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return -errno;
  for (auto& word : data) word.effective = word.permitted;
  return ::syscall(SYS_capset, &header, data) == 0 ? 0 : -errno;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_CAPABILITIES_H_
