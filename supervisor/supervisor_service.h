// The service core behind both API front ends: the function registry (persisted in the
// state store), runtime-pool scripts, a bounded request queue served by worker threads,
// and the idle reaper that drops zygotes after cold_after.
#ifndef ZYGO_SUPERVISOR_SUPERVISOR_SERVICE_H_
#define ZYGO_SUPERVISOR_SUPERVISOR_SERVICE_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "supervisor/code_policy.h"
#include "supervisor/function.h"
#include "supervisor/runtime_registry.h"
#include "supervisor/service.h"
#include "supervisor/state_store.h"

namespace zygo::supervisor {

struct SupervisorOptions {
  FunctionHost host;
  int workers = 64;            // requests running at once, over all functions
  size_t max_queued = 10'000;  // waiting requests past this get ResourceExhausted
  bool warm_on_up = true;      // warm a function in the background when it is registered
  // Where `code` may come from; the state store's own dir is added to its private dirs.
  CodePolicy code_policy;
  // Python functions fork their zygotes from a runtime zygote per image (function_tree.h);
  // false: every function gets a sandbox of its own.
  bool zygote_tree = true;
};

class SupervisorService : public Service {
 public:
  // Loads the functions already in `store`; the warnings say which stored specs failed.
  static absl::StatusOr<std::unique_ptr<SupervisorService>> Create(
      std::unique_ptr<StateStore> store, SupervisorOptions options,
      std::vector<std::string>* warnings);
  ~SupervisorService() override;

  absl::StatusOr<FunctionInfo> Up(const std::string& spec_toml, const std::string& origin,
                                  const std::string& base_dir) override;
  absl::Status Down(const std::string& name) override;
  std::vector<FunctionInfo> List() override;
  absl::StatusOr<std::string> PutScript(const std::string& source) override;
  std::shared_ptr<RequestHandle> Exec(ExecRequest request, ExecCallback done) override;

  // Stops every zygote and the threads. Idempotent.
  void Shutdown();

 private:
  struct Job;
  SupervisorService(std::unique_ptr<StateStore> store, SupervisorOptions options);

  void Register(FunctionSpec spec);
  std::shared_ptr<Function> Find(const std::string& name);
  void WorkerLoop();
  void ReaperLoop();
  void RunJob(Job& job);

  std::unique_ptr<StateStore> store_;
  SupervisorOptions options_;
  RuntimeRegistry runtimes_;  // options_.host.runtimes, with the zygote tree
  std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable reaper_wake_;  // its own, so a job's notify never lands on it
  std::map<std::string, std::shared_ptr<Function>> functions_;
  std::deque<std::unique_ptr<Job>> queue_;
  std::vector<std::thread> workers_;
  std::vector<std::thread> warmers_;
  std::thread reaper_;
  bool shutting_down_ = false;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SUPERVISOR_SERVICE_H_
