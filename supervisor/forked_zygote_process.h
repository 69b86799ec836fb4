// A function zygote forked by a runtime zygote (the zygote tree): placed in the function's
// cgroup, its namespaces sealed from outside (core/forked_zygote.h: its own /proc, /code,
// /tmp, /dev/shm, id maps and limits), then sent Seal with its own log, environment,
// seccomp filter and entry, after which it seals itself and imports the function. From
// then on it is the function's zygote, reached like one in a sandbox of its own. Parent
// (supervisor) side; thread-safe.
#ifndef ZYGO_SUPERVISOR_FORKED_ZYGOTE_PROCESS_H_
#define ZYGO_SUPERVISOR_FORKED_ZYGOTE_PROCESS_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agents/wire/seal.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "core/forked_zygote.h"
#include "supervisor/agent_log.h"
#include "supervisor/runtime_zygote.h"
#include "supervisor/zygote_process.h"

namespace zygo::supervisor {

// What a forked zygote is sealed with: from outside, then by itself.
struct ForkedZygoteSpec {
  core::ForkedZygoteOptions namespaces;
  wire::SealMessage seal;
};

class ForkedZygoteProcess : public ZygoteProcess {
 public:
  // Forks a function zygote from `runtime`, moves it into `cgroup` (null: none), seals it
  // as `spec` says and sends Seal. On any error the forked zygote is killed.
  static absl::StatusOr<std::unique_ptr<ForkedZygoteProcess>> Start(
      std::shared_ptr<RuntimeZygote> runtime, const ForkedZygoteSpec& spec, core::Cgroup* cgroup,
      std::string name, absl::Duration timeout);
  ~ForkedZygoteProcess() override;

  int channel() const override { return channel_.get(); }
  void ShutdownChannel() override;
  // The function zygote itself: pid 1 of the function's pid namespace, in its user namespace.
  pid_t namespace_root() const override { return pid_; }
  int namespace_root_pidfd() const override { return pidfd_.get(); }
  void Kill() override;
  void Stop() override;
  std::string LogTail() const override { return log_.Tail(); }
  // The fork from the runtime zygote, the move into the function's cgroup, the seal.
  std::string StartBreakdown() const override;
  // The runtime's zygo-init reports in the runtime sandbox's pid namespace, one level
  // above the function's: read from the spare's NSpid.
  absl::StatusOr<pid_t> SeccompReportPid(pid_t pid, pid_t announced) const override;
  std::optional<core::SeccompKillNotice> TakeSeccompKill(pid_t report_pid,
                                                         absl::Duration wait) override {
    return runtime_->TakeSeccompKill(report_pid, wait);
  }

 private:
  ForkedZygoteProcess(std::shared_ptr<RuntimeZygote> runtime, ForkedZygote forked,
                      std::string name);
  absl::Status Seal(const ForkedZygoteSpec& spec, core::Cgroup* cgroup);

  absl::Duration fork_time_, cgroup_time_, seal_time_;
  const std::shared_ptr<RuntimeZygote> runtime_;  // kept alive: its death would end this one
  const base::UniqueFd channel_;
  const pid_t pid_;
  const base::UniqueFd pidfd_;
  AgentLog log_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_FORKED_ZYGOTE_PROCESS_H_
