// zygo-init's side of the seccomp filter's user notifications. The filter sends two kinds:
// a call from a foreign ABI (i386's int 0x80, x32), which kills the calling process, and,
// when the run explains its denials, every call the allowlist refuses, which is answered
// EPERM and counted. Either way the call itself never runs: a notified syscall executes
// only if the listener answers with SECCOMP_USER_NOTIF_FLAG_CONTINUE, which this never does.
#ifndef ZYGO_CORE_INIT_SECCOMP_LISTENER_H_
#define ZYGO_CORE_INIT_SECCOMP_LISTENER_H_

#include <cstdint>

namespace zygo::core::init {

class SeccompListener {
 public:
  // `listener_fd` may be -1 (the filter has no listener); `report_fd` gets the records.
  SeccompListener(int listener_fd, int report_fd) : fd_(listener_fd), report_fd_(report_fd) {}

  int fd() const { return fd_; }

  // Takes one notification: a foreign-ABI call kills its process and is reported at once
  // (kSeccompKilled); a refused call is answered EPERM and counted.
  void HandleOne();

  // Reports the counted refusals (kSeccompDenied, one record per syscall number).
  void ReportDenials() const;

 private:
  static constexpr int kCountedSyscalls = 512;  // x86-64's numbers are below this

  int fd_;
  int report_fd_;
  uint32_t denied_[kCountedSyscalls + 1] = {};  // the last slot: numbers past the table
};

}  // namespace zygo::core::init

#endif  // ZYGO_CORE_INIT_SECCOMP_LISTENER_H_
