// Where a function's zygote agent runs, seen from its Zygote: a sandbox of the function's
// own (AgentSandbox), or a function zygote a runtime zygote forked and the supervisor sealed
// (ForkedZygoteProcess). What differs between the two is only how to reach, name and end it.
// Parent (supervisor) side; implementations are thread-safe.
#ifndef ZYGO_SUPERVISOR_ZYGOTE_PROCESS_H_
#define ZYGO_SUPERVISOR_ZYGOTE_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/launch.h"

namespace zygo::supervisor {

class ZygoteProcess {
 public:
  virtual ~ZygoteProcess() = default;

  // The supervisor's end of the zygote channel, with SO_PASSCRED on.
  virtual int channel() const = 0;
  // Shuts the channel down both ways, which wakes its reader.
  virtual void ShutdownChannel() = 0;
  // The process whose user namespace is the function's sandbox's: a spare's own namespaces
  // must be made directly in it (core/nested_tmp.h). 0 and -1 until it runs.
  virtual pid_t namespace_root() const = 0;
  virtual int namespace_root_pidfd() const = 0;
  // SIGKILL to the whole function: its zygote, its spares and their requests.
  virtual void Kill() = 0;
  // Kills it and waits for what watches it. Idempotent.
  virtual void Stop() = 0;
  // The end of what the agent printed.
  virtual std::string LogTail() const = 0;
  // How its start was spent before the agent ran, for the log ("fork 1.2 ms, ..."); empty
  // when there is nothing to say.
  virtual std::string StartBreakdown() const { return ""; }
  // The pid zygo-init reports a seccomp kill of spare `pid` (in the supervisor's pid
  // namespace) with; `announced` is the spare's own getpid() from its Forked.
  virtual absl::StatusOr<pid_t> SeccompReportPid(pid_t pid, pid_t announced) const = 0;
  // The seccomp kill zygo-init reported of `report_pid`, waiting up to `wait`; nullopt if none.
  virtual std::optional<core::SeccompKillNotice> TakeSeccompKill(pid_t report_pid,
                                                                 absl::Duration wait) = 0;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_ZYGOTE_PROCESS_H_
