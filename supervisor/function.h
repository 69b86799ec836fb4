// One registered function (or runtime pool): its spec, its zygote (warmed on first use,
// dropped after cold_after idle, re-warmed after it dies), and its counters.
// Parent (supervisor) side; thread-safe.
#ifndef ZYGO_SUPERVISOR_FUNCTION_H_
#define ZYGO_SUPERVISOR_FUNCTION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/plan.h"
#include "supervisor/cancel_signal.h"
#include "supervisor/function_spec.h"
#include "supervisor/runtime_registry.h"
#include "supervisor/service.h"
#include "supervisor/zygote.h"

namespace zygo::supervisor {

// What every function shares: where the agents are, the cgroup driver, the policy.
struct FunctionHost {
  core::CgroupDriver* cgroups = nullptr;  // null: none usable
  std::string python_agent;               // host path of zygo-agent-python
  std::string exec_agent;                 // host path of zygo-agent-exec
  std::string node_agent;                 // host path of zygo-agent-node
  std::string network_helper;             // host path of zygo-net (egress/full functions)
  std::string pasta_path;                 // empty: /usr/bin/pasta
  std::string dns_upstream;               // empty: the host's resolv.conf
  bool allow_unlimited = false;           // run without cgroups when none can be made
  int max_concurrency = 32;               // requests of one function at once
  // The zygote tree: functions that can fork their zygotes from a shared runtime zygote
  // (function_tree.h) do; null: every function gets a sandbox of its own.
  RuntimeRegistry* runtimes = nullptr;
  // Registries ("HOST[:PORT]") reached over plain HTTP (--insecure-registry); every other
  // but loopback over HTTPS.
  std::vector<std::string> insecure_registries;
  std::string empty_dir;  // an empty directory, a runtime sandbox's /code
};

class Function {
 public:
  Function(FunctionSpec spec, const FunctionHost* host);
  ~Function();

  const FunctionSpec& spec() const { return spec_; }
  FunctionInfo Info() const;

  // Warms the zygote if it is cold (or dead) and runs one request on it. `code` is a pool
  // script's source. Both are moved into the spare's request, not copied: an event can be
  // kMaxEventBytes. Blocks the calling (worker) thread; calls `deliver` exactly once.
  void Run(ExecRequest&& request, std::string&& code, const CancelSignal& cancel,
           const std::function<void(ExecReply)>& deliver);

  // Warms the zygote now (Up does this in the background).
  absl::Status Warm();
  // Drops the zygote if it has been idle for cold_after. Returns true if it did.
  bool DropIfIdle();
  void Stop();

 private:
  absl::StatusOr<std::shared_ptr<Zygote>> WarmZygote();
  absl::StatusOr<ZygoteConfig> BuildZygoteConfig();
  // Points `config` at a runtime zygote to fork from when the function can use one.
  absl::Status UseRuntimeZygote(const core::Spec& sandbox, int nested_namespaces,
                                ZygoteConfig& config);

  const FunctionSpec spec_;
  const FunctionHost* host_;
  std::mutex warm_mu_;  // one warm-up at a time
  mutable std::mutex mu_;
  std::shared_ptr<Zygote> zygote_;
  std::string last_error_;      // of the last warm-up; cleared by one that succeeds
  absl::Status build_failure_;  // a failed venv build: answered, never retried
  std::string progress_;        // the last line of the latest warm-up's pull of the image
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> warm_ups_{0};
  double warm_ms_ = 0;   // the last successful warm-up's (guarded by mu_)
  bool forked_ = false;  // its zygote came from a runtime zygote (guarded by mu_)
  std::atomic<int> in_flight_{0};
  std::atomic<bool> warming_{false};
  std::chrono::steady_clock::time_point last_used_;
  std::atomic<uint64_t> next_request_id_{1};
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_FUNCTION_H_
