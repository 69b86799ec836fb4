// The registry, the request queue and its workers, and the idle reaper.
#include "supervisor/supervisor_service.h"

#include <errno.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "nlohmann/json.hpp"
#include "supervisor/event_limit.h"
#include "supervisor/log.h"

namespace zygo::supervisor {

struct SupervisorService::Job {
  ExecRequest request;
  ExecCallback done;
  std::shared_ptr<CancelSignal> cancel;
  std::chrono::steady_clock::time_point queued_at;
};

namespace {

class CancelHandle : public RequestHandle {
 public:
  explicit CancelHandle(std::shared_ptr<CancelSignal> signal) : signal_(std::move(signal)) {}
  void Cancel() override { signal_->Cancel(); }

 private:
  std::shared_ptr<CancelSignal> signal_;
};

ExecReply ErrorReply(absl::Status status) {
  ExecReply reply;
  reply.status = std::move(status);
  return reply;
}

}  // namespace

SupervisorService::SupervisorService(std::unique_ptr<StateStore> store, SupervisorOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  options_.code_policy.private_dirs.push_back(
      {ResolvePolicyPath(store_->dir()),
       "the supervisor's state directory, which holds every function's spec and [env]"});
}

absl::StatusOr<std::unique_ptr<SupervisorService>> SupervisorService::Create(
    std::unique_ptr<StateStore> store, SupervisorOptions options,
    std::vector<std::string>* warnings) {
  std::unique_ptr<SupervisorService> service(
      new SupervisorService(std::move(store), std::move(options)));
  if (service->options_.zygote_tree) {
    // A runtime sandbox's /code: empty, and nothing in it is ever written.
    const std::string empty = absl::StrCat(service->store_->dir(), "/empty");
    if (::mkdir(empty.c_str(), 0555) != 0 && errno != EEXIST) {
      return base::ErrnoStatus(errno, absl::StrCat("mkdir(", empty, ")"));
    }
    service->options_.host.empty_dir = empty;
    service->options_.host.runtimes = &service->runtimes_;
  }
  absl::StatusOr<LoadedFunctions> loaded =
      service->store_->LoadFunctions(service->options_.code_policy);
  if (!loaded.ok()) return loaded.status();
  for (std::string& warning : loaded->warnings) warnings->push_back(std::move(warning));
  for (FunctionSpec& spec : loaded->functions) service->Register(std::move(spec));
  for (int i = 0; i < service->options_.workers; ++i) {
    service->workers_.emplace_back(&SupervisorService::WorkerLoop, service.get());
  }
  service->reaper_ = std::thread(&SupervisorService::ReaperLoop, service.get());
  return service;
}

SupervisorService::~SupervisorService() { Shutdown(); }

void SupervisorService::Shutdown() {
  std::map<std::string, std::shared_ptr<Function>> functions;
  std::deque<std::unique_ptr<Job>> queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    functions.swap(functions_);
    queued.swap(queue_);
    work_ready_.notify_all();
    reaper_wake_.notify_all();
  }
  for (auto& job : queued) {
    job->done(ErrorReply(absl::UnavailableError("the supervisor is shutting down")));
  }
  for (auto& [name, function] : functions) function->Stop();
  for (std::thread& worker : workers_) worker.join();
  for (std::thread& warmer : warmers_) warmer.join();
  if (reaper_.joinable()) reaper_.join();
}

// Replaces a function of the same name: its zygote stops, requests in flight on it finish
// with their own reference, new ones go to the new spec.
void SupervisorService::Register(FunctionSpec spec) {
  auto function = std::make_shared<Function>(std::move(spec), &options_.host);
  std::shared_ptr<Function> replaced;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = functions_[function->spec().name];
    replaced = std::move(slot);
    slot = function;
    if (options_.warm_on_up) {
      warmers_.emplace_back([function] {
        absl::Status warmed = function->Warm();
        if (!warmed.ok()) {
          Log(LogLevel::kError, warmed.message());
        }
      });
    }
  }
  if (replaced) replaced->Stop();
}

std::shared_ptr<Function> SupervisorService::Find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = functions_.find(name);
  return found == functions_.end() ? nullptr : found->second;
}

absl::StatusOr<FunctionInfo> SupervisorService::Up(const std::string& spec_toml,
                                                   const std::string& origin,
                                                   const std::string& base_dir) {
  absl::StatusOr<FunctionSpec> spec =
      ParseFunctionSpec(spec_toml, origin, base_dir, options_.code_policy);
  if (!spec.ok()) return spec.status();
  absl::Status saved = store_->SaveFunction(*spec);
  if (!saved.ok()) return saved;
  FunctionInfo info = ToFunctionInfo(*spec);
  Register(*std::move(spec));
  std::shared_ptr<Function> function = Find(info.name);
  return function ? function->Info() : info;
}

absl::Status SupervisorService::Down(const std::string& name) {
  std::shared_ptr<Function> function;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = functions_.find(name);
    if (found == functions_.end()) {
      return absl::NotFoundError(absl::StrCat("no function named \"", name, "\""));
    }
    function = std::move(found->second);
    functions_.erase(found);
  }
  function->Stop();
  absl::Status removed = store_->RemoveFunction(name);
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  return absl::OkStatus();
}

std::vector<FunctionInfo> SupervisorService::List() {
  std::vector<std::shared_ptr<Function>> functions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, function] : functions_) functions.push_back(function);
  }
  std::vector<FunctionInfo> infos;
  for (auto& function : functions) infos.push_back(function->Info());
  return infos;
}

absl::StatusOr<std::string> SupervisorService::PutScript(const std::string& source) {
  return store_->PutScript(source);
}

std::shared_ptr<RequestHandle> SupervisorService::Exec(ExecRequest request, ExecCallback done) {
  auto job = std::make_unique<Job>();
  job->request = std::move(request);
  job->done = std::move(done);
  job->cancel = std::make_shared<CancelSignal>();
  job->queued_at = std::chrono::steady_clock::now();
  auto handle = std::make_shared<CancelHandle>(job->cancel);
  // Refused before it is queued, so an event over the limit never waits holding memory.
  absl::Status why = CheckEventSize(job->request.event_json.size(), job->request.stdin_data.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (why.ok() && shutting_down_) {
      why = absl::UnavailableError("the supervisor is shutting down");
    } else if (why.ok() && queue_.size() >= options_.max_queued) {
      why = absl::ResourceExhaustedError(
          absl::StrCat("over capacity: ", queue_.size(), " requests are waiting"));
    }
    if (why.ok()) queue_.push_back(std::move(job));
  }
  if (!why.ok()) {
    // Still answered from a worker-free path, but never inside Exec: a detached thread.
    std::thread([done = std::move(job->done), why] { done(ErrorReply(why)); }).detach();
    return handle;
  }
  // Outside the lock: a worker woken while the loop thread still held it would go straight
  // back to sleep on the mutex (two more context switches on the request path).
  work_ready_.notify_one();
  return handle;
}

void SupervisorService::WorkerLoop() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [&] { return shutting_down_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    RunJob(*job);
  }
}

void SupervisorService::RunJob(Job& job) {
  const ExecRequest& request = job.request;
  if (job.cancel->cancelled()) {
    job.done(ErrorReply(absl::CancelledError("the caller went away before the request ran")));
    return;
  }
  std::shared_ptr<Function> function = Find(request.function);
  if (!function) {
    job.done(ErrorReply(
        absl::NotFoundError(absl::StrCat("no function named \"", request.function, "\""))));
    return;
  }
  const FunctionSpec& spec = function->spec();
  std::string code;
  if (spec.pool) {
    if (request.script_digest.empty()) {
      job.done(ErrorReply(absl::InvalidArgumentError(absl::StrCat(
          request.function, " is a runtime pool: name a script (PUT /v1/scripts gives digests)"))));
      return;
    }
    absl::StatusOr<std::string> script = store_->GetScript(request.script_digest);
    if (!script.ok()) {
      job.done(ErrorReply(script.status()));
      return;
    }
    code = *std::move(script);
  } else if (!request.script_digest.empty()) {
    job.done(ErrorReply(absl::InvalidArgumentError(
        absl::StrCat(request.function, " is not a runtime pool: it takes no script"))));
    return;
  }
  // A handler (python, node) gets the event, which must be JSON; an exec function gets the
  // body on stdin.
  const bool handler = spec.runtime != Runtime::kExec;
  if (handler && !request.event_json.empty() && !nlohmann::json::accept(request.event_json)) {
    job.done(ErrorReply(absl::InvalidArgumentError("the event is not valid JSON")));
    return;
  }
  // Moved, not copied: an event can be kMaxEventBytes, and `request` is not read again.
  ExecRequest adjusted = std::move(job.request);
  if (handler) adjusted.stdin_data.clear();
  if (!handler) adjusted.event_json.clear();
  const auto queued_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now() - job.queued_at)
                             .count();
  function->Run(std::move(adjusted), std::move(code), *job.cancel, [&](ExecReply reply) {
    reply.timings.total_us += queued_us;
    job.done(std::move(reply));
  });
}

void SupervisorService::ReaperLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    reaper_wake_.wait_for(lock, std::chrono::seconds(1));
    if (shutting_down_) return;
    std::vector<std::shared_ptr<Function>> functions;
    for (auto& [name, function] : functions_) functions.push_back(function);
    lock.unlock();
    for (auto& function : functions) function->DropIfIdle();
    lock.lock();
  }
}

}  // namespace zygo::supervisor
