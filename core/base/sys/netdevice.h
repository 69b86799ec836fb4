// Network device ioctls. Async-signal-safe; each returns 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_NETDEVICE_H_
#define ZYGO_CORE_BASE_SYS_NETDEVICE_H_

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace zygo::base::sys {

// Sets IFF_UP on interface `name` in the caller's network namespace (needs
// CAP_NET_ADMIN over it).
inline int RawSetInterfaceUp(const char* name) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  struct ifreq request = {};
  strncpy(request.ifr_name, name, IFNAMSIZ - 1);
  int rc = ::ioctl(fd, SIOCGIFFLAGS, &request);
  if (rc == 0) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
    rc = ::ioctl(fd, SIOCSIFFLAGS, &request);
  }
  int err = rc < 0 ? errno : 0;
  ::close(fd);
  return -err;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_NETDEVICE_H_
