// Fixed-size records a sandbox child writes to its parent over a CLOEXEC pipe.
// Everything here is async-signal-safe: no allocation, no locks, no logging.
#ifndef ZYGO_CORE_BASE_CHILD_REPORT_H_
#define ZYGO_CORE_BASE_CHILD_REPORT_H_

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

namespace zygo::base {

enum class ChildRecordKind : int32_t {
  kSetupFailed = 1,  // step + err: a setup step failed; the child exits.
  kExecFailed = 2,   // err: execve of the command failed (ENOENT -> 127, else 126).
  kExecStarted = 3,  // value: the command (its pid in the sandbox); its execve succeeded.
  kExited = 4,       // value: the command's wait status.
  // step: the syscall number, err: its AUDIT_ARCH, value: the process (as the sandbox's
  // pid namespace numbers it) that the init killed for a call from a foreign ABI.
  kSeccompKilled = 5,
  // step: a syscall number (-1: one past the init's table), value: how many calls of it
  // the allowlist refused. Sent before kExited, only when the run explains its denials.
  kSeccompDenied = 6,
};

struct ChildRecord {
  ChildRecordKind kind;
  int32_t step;   // a launch step id, meaningful for kSetupFailed (see the kinds above).
  int32_t err;    // errno, meaningful for kSetupFailed and kExecFailed.
  int32_t value;  // wait status for kExited; the failing item for kSetupFailed.
};

// Writes one record; pipe writes of this size are atomic (< PIPE_BUF).
inline void WriteChildRecord(int fd, ChildRecordKind kind, int32_t step, int32_t err,
                             int32_t value) {
  ChildRecord record{kind, step, err, value};
  while (::write(fd, &record, sizeof(record)) < 0 && errno == EINTR) {
  }
}

// Reports a failed step and ends the child. For use between clone and exec only.
// `detail` says which item of a step failed (e.g. the mount plan's index).
[[noreturn]] inline void FailChildStep(int fd, int32_t step, int32_t err, int32_t detail = 0) {
  WriteChildRecord(fd, ChildRecordKind::kSetupFailed, step, err, detail);
  ::_exit(125);
}

}  // namespace zygo::base

#endif  // ZYGO_CORE_BASE_CHILD_REPORT_H_
