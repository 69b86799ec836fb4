// A sandbox whose command is an agent speaking the wire protocol on fd 3: launched on a
// thread that lives as long as the sandbox (the init's PR_SET_PDEATHSIG fires when the
// thread that cloned it exits), with the agent's output in an AgentLog. Both a function's
// own zygote and a runtime zygote live in one. Parent (supervisor) side; thread-safe.
#ifndef ZYGO_SUPERVISOR_AGENT_SANDBOX_H_
#define ZYGO_SUPERVISOR_AGENT_SANDBOX_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "runtime/sandbox_recipe.h"
#include "supervisor/agent_log.h"
#include "supervisor/zygote_process.h"

namespace zygo::supervisor {

struct AgentSandboxConfig {
  runtime::Sandbox sandbox;               // its command is the agent, which talks on fd 3
  core::CgroupDriver* cgroups = nullptr;  // null: no limits (the plan allows unlimited)
  core::Cgroup* cgroup = nullptr;         // the caller's cgroup to launch into; null: none
  std::string name;                       // for messages and the log prefix
};

class AgentSandbox : public ZygoteProcess {
 public:
  // Starts the launch; `on_ended` is called once, on the launch thread, with how the sandbox
  // ended (its outcome, or why it could not start). The channel is open from the start.
  static absl::StatusOr<std::unique_ptr<AgentSandbox>> Launch(
      AgentSandboxConfig config, std::function<void(const std::string& why)> on_ended);
  ~AgentSandbox() override;

  int channel() const override { return channel_.get(); }
  void ShutdownChannel() override;
  // The sandbox's init, once it runs; the pidfd stays owned here.
  pid_t namespace_root() const override;
  int namespace_root_pidfd() const override;
  // SIGKILL to the init (its pid namespace goes with it), now or as soon as it starts.
  void Kill() override;
  void Stop() override;
  std::string LogTail() const override { return log_.Tail(); }
  // Spares announce their pid in the sandbox's own pid namespace, zygo-init's.
  absl::StatusOr<pid_t> SeccompReportPid(pid_t pid, pid_t announced) const override {
    return announced;
  }
  // Reports and exits come by different paths, hence the wait; a sandbox that ended has
  // nothing more to report.
  std::optional<core::SeccompKillNotice> TakeSeccompKill(pid_t sandbox_pid,
                                                         absl::Duration wait) override;

 private:
  explicit AgentSandbox(AgentSandboxConfig config) : config_(std::move(config)) {}
  void LaunchThread(base::UniqueFd agent_end, base::UniqueFd log_end,
                    std::function<void(const std::string&)> on_ended);

  const AgentSandboxConfig config_;
  base::UniqueFd channel_;
  AgentLog log_{config_.name};
  std::thread launch_thread_;

  mutable std::mutex mu_;
  std::condition_variable kills_cv_;
  base::UniqueFd pidfd_;
  pid_t init_pid_ = 0;
  bool stopping_ = false;
  bool ended_ = false;
  std::map<pid_t, core::SeccompKillNotice> seccomp_kills_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_AGENT_SANDBOX_H_
