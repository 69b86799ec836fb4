// The seccomp(2) syscall and its user-notification ioctls. Async-signal-safe; each
// returns 0 (or an fd) or -errno.
#ifndef ZYGO_CORE_BASE_SYS_SECCOMP_H_
#define ZYGO_CORE_BASE_SYS_SECCOMP_H_

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::base::sys {

// A seccomp filter sees x32 calls with x86-64's AUDIT_ARCH and this bit in their number.
inline constexpr uint32_t kX32SyscallBit = 0x40000000;

// Whether a call seen by a filter with `arch` and number `nr` is an x32 call.
inline bool IsX32Call(uint32_t arch, int nr) {
  return arch == AUDIT_ARCH_X86_64 && (static_cast<uint32_t>(nr) & kX32SyscallBit) != 0;
}

inline int RawSeccompSetFilter(const struct sock_fprog* program) {
  int rc = static_cast<int>(
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, program));
  return rc < 0 ? -errno : 0;
}

// Installs `program` and returns the filter's notification listener fd (CLOEXEC), or
// -errno: EBUSY when a filter already in place has a listener (the kernel allows one per
// task's chain). No TSYNC: the kernel refuses it beside a new listener, and the caller is
// single-threaded.
inline int RawSeccompSetFilterWithListener(const struct sock_fprog* program) {
  int rc = static_cast<int>(
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, program));
  return rc < 0 ? -errno : rc;
}

// Takes the next notification. The kernel requires `request` zeroed.
inline int RawSeccompNotifyReceive(int listener, struct seccomp_notif* request) {
  memset(request, 0, sizeof(*request));
  int rc;
  do {
    rc = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, request);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? -errno : 0;
}

// Answers notification `id`: the call fails with `err` and never runs.
inline int RawSeccompNotifyDeny(int listener, uint64_t id, int err) {
  struct seccomp_notif_resp response;
  memset(&response, 0, sizeof(response));
  response.id = id;
  response.error = -err;
  int rc;
  do {
    rc = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &response);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? -errno : 0;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_SECCOMP_H_
