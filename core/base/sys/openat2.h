// openat2(2) (Linux 5.6), which glibc does not wrap: path resolution scoped to a
// directory fd (RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS, ...). Async-signal-safe.
#ifndef ZYGO_CORE_BASE_SYS_OPENAT2_H_
#define ZYGO_CORE_BASE_SYS_OPENAT2_H_

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace zygo::base::sys {

// openat2(dirfd, path, {flags, mode, resolve}). Returns the new fd or -errno. Retries
// EINTR, and EAGAIN, which RESOLVE_IN_ROOT/RESOLVE_BENEATH return when a rename or
// mount raced with the lookup (openat2(2), "EAGAIN"). -ENOSYS means a kernel before
// 5.6 (or a seccomp filter that hides the call).
inline int RawOpenat2(int dirfd, const char* path, uint64_t flags, uint64_t mode,
                      uint64_t resolve) {
  struct open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  long rc;
  do {
    rc = ::syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
  } while (rc < 0 && (errno == EINTR || errno == EAGAIN));
  return rc < 0 ? -errno : static_cast<int>(rc);
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_OPENAT2_H_
