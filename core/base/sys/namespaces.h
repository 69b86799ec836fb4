// setns, unshare and the nsfs ioctls. Async-signal-safe; each returns 0 (or what it
// names) or -errno.
#ifndef ZYGO_CORE_BASE_SYS_NAMESPACES_H_
#define ZYGO_CORE_BASE_SYS_NAMESPACES_H_

#include <errno.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace zygo::base::sys {

// setns(fd, nstype): joins the namespace `fd` names (a /proc/PID/ns file).
inline int RawSetns(int fd, int nstype) {
  int rc = static_cast<int>(::syscall(SYS_setns, fd, nstype));
  return rc < 0 ? -errno : 0;
}

// unshare(flags).
inline int RawUnshare(unsigned long flags) {
  int rc = static_cast<int>(::syscall(SYS_unshare, flags));
  return rc < 0 ? -errno : 0;
}

// ioctl(NS_GET_OWNER_UID): the uid that owns user namespace `ns`, as the caller's user
// namespace sees it.
inline int RawNamespaceOwnerUid(int ns, uid_t* owner) {
  int rc = static_cast<int>(::syscall(SYS_ioctl, ns, NS_GET_OWNER_UID, owner));
  return rc < 0 ? -errno : 0;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_NAMESPACES_H_
