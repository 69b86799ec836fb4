// clone3 and pidfd syscalls. The raw functions are async-signal-safe and return
// -errno on failure so the child side can use them; parent code wraps them in Status.
#ifndef ZYGO_CORE_BASE_SYS_PROCESS_H_
#define ZYGO_CORE_BASE_SYS_PROCESS_H_

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace zygo::base::sys {

// Returns the child's pid in the parent, 0 in the child, -errno on failure.
inline long RawClone3(struct clone_args* args) {
  long rc = ::syscall(SYS_clone3, args, sizeof(*args));
  return rc < 0 ? -errno : rc;
}

// clone3 asked with a size below CLONE_ARGS_SIZE_VER0, which a kernel that has it rejects
// with EINVAL before reading anything: -EINVAL says it is there, -ENOSYS or -EPERM that
// the kernel lacks it or a seccomp filter answers for it. Nothing is made.
inline long RawClone3Probe() {
  long rc = ::syscall(SYS_clone3, nullptr, 0);
  return rc < 0 ? -errno : rc;
}

// clone3(CLONE_INTO_CGROUP) with a cgroup fd above INT_MAX: a kernel that knows the flag
// (Linux 5.7+) rejects the fd with EINVAL; one whose clone_args end before the cgroup
// field answers E2BIG for its unknown non-zero tail. Nothing is made either way.
inline long RawCloneIntoCgroupProbe() {
  struct clone_args args = {};
  args.flags = CLONE_INTO_CGROUP;
  args.cgroup = 1ULL << 31;  // INT_MAX + 1
  long rc = ::syscall(SYS_clone3, &args, sizeof(args));
  return rc < 0 ? -errno : rc;
}

// Returns a pidfd, or -errno.
inline int RawPidfdOpen(pid_t pid) {
  int rc;
  do {
    rc = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? -errno : rc;
}

// Returns 0 or -errno.
inline int RawPidfdSendSignal(int pidfd, int sig) {
  int rc = static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
  return rc < 0 ? -errno : 0;
}

// PIDFD_GET_INFO (Linux 6.13), declared here since Debian 12's headers predate it. The
// first version of the struct; the kernel fills what fits in the size the request names.
struct PidfdInfo {
  uint64_t mask;
  uint64_t cgroupid;
  uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  uint32_t spare0[1];
};
static_assert(sizeof(PidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");
inline constexpr uint64_t kPidfdInfoPid = 1;  // PIDFD_INFO_PID: pid, tgid, ppid are set
inline constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

// Fills `info` for the process `pidfd` names. Returns 0 or -errno: ESRCH once it has been
// reaped, ENOTTY (or EINVAL) on kernels before 6.13.
inline int RawPidfdGetInfo(int pidfd, PidfdInfo* info) {
  *info = PidfdInfo{};
  info->mask = kPidfdInfoPid;
  return ::ioctl(pidfd, kPidfdGetInfo, info) < 0 ? -errno : 0;
}

// Marks every fd from `first` up CLOEXEC. Returns 0 or -errno.
inline int RawCloseRangeCloexec(unsigned first) {
  constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11.
  int rc = static_cast<int>(::syscall(SYS_close_range, first, ~0U, kCloseRangeCloexec));
  return rc < 0 ? -errno : 0;
}

// execveat(fd, "", argv, envp, AT_EMPTY_PATH): runs the program `fd` holds. Returns only
// on failure, with -errno.
inline int RawExecveat(int fd, char* const* argv, char* const* envp) {
  ::syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
  return -errno;
}

// close_range(first, last, 0). Async-signal-safe; returns 0 or -errno.
inline int RawCloseRange(unsigned first, unsigned last) {
  int rc = static_cast<int>(::syscall(SYS_close_range, first, last, 0));
  return rc < 0 ? -errno : 0;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_PROCESS_H_
