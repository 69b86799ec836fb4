// The seccomp(2) syscall. Async-signal-safe; returns 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_SECCOMP_H_
#define ZYGO_CORE_BASE_SYS_SECCOMP_H_

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::base::sys {

inline int RawSeccompSetFilter(const struct sock_fprog* program) {
  int rc = static_cast<int>(
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, program));
  return rc < 0 ? -errno : 0;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_SECCOMP_H_
