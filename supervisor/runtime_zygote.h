// A runtime zygote: a sandbox per image (and venv) whose agent holds the interpreter and
// the standard library but no function (zygo-agent-python --runtime). Functions on that
// image fork their zygotes from it, each then sealed into namespaces of its own
// (ForkedZygoteProcess), so a function pays only for its own imports (docs/supervisor.md,
// "The zygote tree"). Nothing of any function reaches it: it is told only to fork. Its
// death ends every function zygote it forked (they live in its pid namespace). Parent
// (supervisor) side; thread-safe.
#ifndef ZYGO_SUPERVISOR_RUNTIME_ZYGOTE_H_
#define ZYGO_SUPERVISOR_RUNTIME_ZYGOTE_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agents/wire/frame.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "runtime/sandbox_recipe.h"
#include "supervisor/agent_sandbox.h"

namespace zygo::supervisor {

struct RuntimeZygoteConfig {
  runtime::Sandbox sandbox;               // its command is the agent in runtime mode
  core::CgroupDriver* cgroups = nullptr;  // null: no limits (the plan allows unlimited)
  core::CgroupLimits limits;              // the runtime zygote's own cgroup
  std::string name;                       // for messages and the log prefix
  absl::Duration warm_timeout = absl::Seconds(60);
};

// A function zygote just forked, announced and not yet sealed: pid 1 of its own pid
// namespace, waiting for Seal on `channel`.
struct ForkedZygote {
  base::UniqueFd channel;  // the supervisor's end of the function's zygote channel
  pid_t pid = 0;           // in the supervisor's pid namespace
  base::UniqueFd pidfd;
};

class RuntimeZygote {
 public:
  // Starts the sandbox and waits for the agent's Hello; the error carries the end of what
  // the agent printed.
  static absl::StatusOr<std::shared_ptr<RuntimeZygote>> Start(RuntimeZygoteConfig config);
  ~RuntimeZygote();

  // Asks for a function zygote and waits up to `timeout` for it to announce itself. An
  // error names why the fork failed (the runtime's Done or Error), or that it died.
  absl::StatusOr<ForkedZygote> Fork(absl::Duration timeout);

  // The runtime sandbox's init: its user namespace is the one every forked zygote's is
  // made in (core/forked_zygote.h).
  pid_t init_pid() const { return sandbox_->namespace_root(); }
  int init_pidfd() const { return sandbox_->namespace_root_pidfd(); }
  // zygo-init kills a forked zygote's process for a foreign-ABI call too; its report names
  // the pid in this sandbox's pid namespace.
  std::optional<core::SeccompKillNotice> TakeSeccompKill(pid_t pid, absl::Duration wait) {
    return sandbox_->TakeSeccompKill(pid, wait);
  }
  const std::string& name() const { return config_.name; }
  bool alive() const { return !dead_.load(); }
  // Kills the sandbox, every function zygote it forked with it, and waits. Idempotent.
  void Stop();

 private:
  explicit RuntimeZygote(RuntimeZygoteConfig config) : config_(std::move(config)) {}
  absl::Status Launch();
  void ReaderLoop();
  void Resolve(uint64_t id, absl::StatusOr<ForkedZygote> result);
  void MarkDead(const std::string& why);

  const RuntimeZygoteConfig config_;
  std::unique_ptr<core::Cgroup> cgroup_;
  std::unique_ptr<AgentSandbox> sandbox_;
  std::thread reader_thread_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hello_ = false;
  std::string death_;  // why it died, once it did
  uint64_t next_id_ = 1;
  // Forks asked for and not yet answered; an answer is kept until its asker takes it.
  std::map<uint64_t, std::optional<absl::StatusOr<ForkedZygote>>> forks_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_RUNTIME_ZYGOTE_H_
