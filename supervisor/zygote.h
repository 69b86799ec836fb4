// One warm sandbox: an agent (the zygote) inside it, the spares it forks ahead of demand,
// and the requests they run. A spare is forked and moved into its own cgroup before any
// request needs it, so a request pays only for sending the event and getting the answer
// back (a v1 cgroup move costs up to ~11 ms after a quiet spell; see docs/supervisor.md).
// A taken spare is replaced once its answered child is reaped, or at once when no other
// spare is ready (spare_pool.cc). This class launches the sandbox, reads the agent's
// channel and handles its death; a request's run is RequestRun's. Parent (supervisor)
// side; thread-safe.
#ifndef ZYGO_SUPERVISOR_ZYGOTE_H_
#define ZYGO_SUPERVISOR_ZYGOTE_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agents/wire/frame.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/plan.h"
#include "runtime/sandbox_recipe.h"
#include "supervisor/cancel_signal.h"
#include "supervisor/forked_zygote_process.h"
#include "supervisor/learned_prefault.h"
#include "supervisor/request_cgroups.h"
#include "supervisor/runtime_zygote.h"
#include "supervisor/script_bytecode_cache.h"
#include "supervisor/service.h"
#include "supervisor/spare_pool.h"
#include "supervisor/zygote_process.h"
#include "supervisor/zygote_spare.h"

namespace zygo::supervisor {

struct ZygoteConfig {
  // The sandbox; its command is the agent, which talks on fd 3. An egress/full network
  // is held by zygo-net for the zygote's whole life and shared by its requests.
  runtime::Sandbox sandbox;
  // Set: the zygote is forked by this runtime zygote and sealed as `forked` says (the
  // zygote tree) instead of launched in `sandbox`, whose plan still describes the
  // function's sandbox (its ids, its /tmp, what it may loosen).
  std::shared_ptr<RuntimeZygote> runtime;
  ForkedZygoteSpec forked;
  core::CgroupDriver* cgroups = nullptr;  // null: no limits (the plan allows unlimited)
  core::CgroupLimits request_limits;      // each request's own cgroup
  int spares = 2;
  absl::Duration warm_timeout = absl::Seconds(60);
  std::string name;  // for messages and the log prefix
  // The agent reports the pages its children touch (Run.report_touched) and takes a
  // Prefault (python); warm-exec's children exec a command, which keeps no page.
  bool learn_prefault = false;
};

// What one request asks of a spare.
struct SpareRequest {
  uint64_t request_id = 0;
  std::string entry;  // handler, command, or a pool script's digest
  std::string code;   // a pool script's source
  std::string event;
  std::string stdin_data;
  int64_t timeout_ms = 0;
};

// Lock order: mu_ is never held while calling the pool or RequestCgroups, and neither
// calls back with its own lock held, so none of the three locks nest.
class Zygote : private SparePool::Host {
 public:
  // Per pool zygote: thousands of small scripts fit; the oldest go first beyond it.
  static constexpr size_t kMaxBytecodeCacheBytes = 64 << 20;
  // Spares a request is offered to when the one it was sent to has died meanwhile.
  static constexpr int kSendAttempts = 3;

  // Starts the sandbox and waits until the agent says Hello (warm) or fails; the error
  // carries the end of what the agent printed (an import error's traceback, say).
  static absl::StatusOr<std::unique_ptr<Zygote>> Start(ZygoteConfig config);
  ~Zygote() override;

  // Runs one request on a spare and calls `deliver` with the reply as soon as it is known;
  // then removes the request's cgroup, on the caller's thread.
  void Run(const SpareRequest& request, const CancelSignal& cancel,
           const std::function<void(ExecReply)>& deliver);

  bool alive() const { return !dead_.load(); }
  // Kills the sandbox and waits for its threads. Idempotent.
  void Stop();
  // Sandbox start (or the fork from a runtime zygote) until the agent's Hello.
  absl::Duration warm_time() const { return warm_time_; }
  // Forked from a runtime zygote rather than started in a sandbox of its own.
  bool forked() const { return config_.runtime != nullptr; }
  // Where its start went before the agent ran (ZygoteProcess::StartBreakdown).
  std::string start_breakdown() const { return process_ ? process_->StartBreakdown() : ""; }

 private:
  friend class RequestRun;  // a request's run uses the spares, statuses and caches below
  using Clock = std::chrono::steady_clock;
  explicit Zygote(ZygoteConfig config);

  absl::Status Launch();
  void ReaderLoop();
  void HandleDone(wire::ReceivedFrame& received);
  void HandleForked(wire::ReceivedFrame& received);
  absl::Status PrepareSpare(Spare& spare);
  absl::Status Admit(Spare& spare, core::Cgroup& cgroup);
  absl::Status GiveOwnTmp(Spare& spare);
  // SparePool::Host: a Spawn to the agent, and a spare's end.
  absl::Status SendSpawn(uint64_t id) override;
  void DestroySpare(std::unique_ptr<Spare> spare) override;
  void MarkDead(const std::string& why);
  std::optional<int> WaitExitStatus(uint64_t spare_id, absl::Duration wait);
  // The seccomp kill zygo-init reported of `sandbox_pid`, waiting up to `wait` for it (its
  // report and the spare's exit come by different paths); nullopt if none.
  std::optional<core::SeccompKillNotice> TakeSeccompKill(pid_t sandbox_pid, absl::Duration wait);
  void KillSpare(Spare& spare);
  void RetireSpare(std::unique_ptr<Spare> spare);
  void TrimSpares();
  std::string LogTail() const;

  ZygoteConfig config_;
  std::unique_ptr<core::Cgroup> cgroup_;         // the function's: the zygote's leaf and requests
  std::unique_ptr<core::Cgroup> zygote_cgroup_;  // the leaf the sandbox itself lives in
  // Where the agent runs; set by Launch, before the reader starts, and kept to the end.
  std::unique_ptr<ZygoteProcess> process_;
  std::thread reader_thread_;
  absl::Duration warm_time_;

  mutable std::mutex mu_;
  std::condition_variable hello_cv_;     // the agent said Hello, or died
  std::condition_variable status_cv_;    // an exit status arrived (only error paths wait)
  bool hello_ = false;                   // the agent is warm
  pid_t agent_pid_ = 0;                  // the zygote agent, in our pid namespace
  std::map<uint64_t, int> exit_status_;  // spare id -> wait status, from the zygote's Done
  // Spares whose request is answered, kept until the zygote reports their exit: then the
  // reader removes their cgroups, so no request thread waits for a process to end.
  std::map<uint64_t, std::unique_ptr<Spare>> retiring_;
  // A spare answered Join with Error: later spares are moved by the supervisor instead.
  std::atomic<bool> join_refused_{false};
  // A pool's scripts as its spares compiled them (supervisor/script_bytecode_cache.h).
  ScriptBytecodeCache bytecode_{kMaxBytecodeCacheBytes};
  // Each request's own cgroup, inside cgroup_ (supervisor/request_cgroups.h).
  RequestCgroups request_cgroups_{config_.request_limits};
  // The pages its spares take ahead of their requests (supervisor/learned_prefault.h).
  LearnedPrefault prefault_{config_.request_limits.memory_bytes};
  std::atomic<bool> dead_{false};
  std::atomic<bool> stopping_{false};
  // Its spares, ready and being forked; closed with the death's reason (spare_pool.h).
  SparePool pool_{*this, config_.spares, config_.name};
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_ZYGOTE_H_
