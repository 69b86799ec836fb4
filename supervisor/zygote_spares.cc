// A zygote's spares: taking one for a request, keeping their number at the configured
// count (more while requests wait), retiring answered ones, and reusing emptied request
// cgroups. The lifecycle and the reader are in zygote.cc, a request's run in
// zygote_request.cc.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "supervisor/log.h"
#include "supervisor/zygote.h"
#include "supervisor/zygote_spare.h"

namespace zygo::supervisor {
namespace {

// A spare answers Join once its isolation is set up, well under a millisecond after its
// fork; a request that takes it sooner waits for that anyway.
constexpr auto kJoinAnswerWait = std::chrono::seconds(1);
// How long a request waiting for a spare sleeps before it looks at its cancel again.
constexpr auto kWaiterRecheck = std::chrono::milliseconds(25);

}  // namespace

// Into its request cgroup before anything of a request reaches it. On cgroup v1 the spare
// moves itself: a move made by another process waits, after an idle spell, for an RCU
// grace period (6-14 ms measured on these VMs), long enough at 250 requests/s for both
// spares to be taken and a request to wait for the next; a process moving itself never
// does (0.07 ms for four hierarchies). Join is sent here and not waited for: its answer is
// read just before the spare's Run (FinishJoin), since waking this thread once more per spare
// to read it lengthened the tail of requests running meanwhile (docs/bench-warm.md run I).
// The join files could move any process the spare can name (only its own sandbox's), so
// they go only to a fresh spare, whose code is the zygote's, and it closes them before any
// request; see docs/security-model.md.
absl::Status Zygote::Admit(Spare& spare, core::Cgroup& cgroup) {
  if (!join_refused_.load()) {
    absl::StatusOr<std::vector<int>> files = cgroup.SelfJoinFiles();
    if (files.ok() && !files->empty() && files->size() <= wire::kMaxFdsPerFrame) {
      absl::StatusOr<wire::Frame> join = wire::Encode(wire::JoinMessage{});
      if (!join.ok()) return join.status();
      ZYGO_RETURN_IF_ERROR(wire::SendFrame(spare.channel.get(), *join, *files));
      spare.joining = true;
      return absl::OkStatus();
    }
  }
  return cgroup.AttachFromParent(spare.pid);
}

// The spare's answer to Join, read by the request's thread before the Run goes out (it is
// normally waiting already). Error: this host will not let a spare write there, so it and
// every later spare are moved by the supervisor. A spare that answers nothing sane is gone.
absl::Status Zygote::FinishJoin(Spare& spare, Clock::time_point deadline) {
  spare.joining = false;
  const auto wait = std::min<Clock::duration>(kJoinAnswerWait, deadline - Clock::now());
  absl::StatusOr<wire::ReceivedFrame> answer = wire::ReceiveFrame(
      spare.channel.get(), absl::FromChrono(std::max(wait, Clock::duration::zero())));
  if (!answer.ok()) return answer.status();
  if (wire::DecodeJoined(*answer).ok()) return absl::OkStatus();
  absl::StatusOr<wire::ErrorMessage> error = wire::DecodeError(*answer);
  if (!error.ok()) {
    return absl::InternalError("the spare answered Join with neither Joined nor Error");
  }
  if (!join_refused_.exchange(true)) {
    LogFor(config_.name, LogLevel::kWarning,
           absl::StrCat("a spare did not join its cgroup by itself (", error->message,
                        "); the supervisor moves spares from now on"));
  }
  return spare.cgroup ? spare.cgroup->AttachFromParent(spare.pid) : absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Zygote::Spare>> Zygote::TakeSpare(int64_t wait_ms,
                                                                 const CancelSignal& cancel) {
  auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (dead_.load()) {
      return absl::UnavailableError(absl::StrCat("the zygote of ", config_.name, " died (",
                                                 death_reason_,
                                                 "); it is re-warmed on the next request"));
    }
    if (cancel.cancelled()) return absl::CancelledError("the caller went away");
    if (!ready_.empty()) break;
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError("no process was free before the request's deadline");
    }
    // Demand beyond the spares: one more is forked for each waiting request (a lost one
    // is replaced the same way: the reader notifies when one is).
    ++waiters_;
    lock.unlock();
    TopUpSpares();
    lock.lock();
    // Timed for a cancel, which has no way to notify this condition variable. Not much
    // shorter: under load most requests wait here a few milliseconds, and each wake-up
    // takes this lock twice more (5 ms made a third of the supervisor's futex calls).
    ready_cv_.wait_for(lock, std::min<Clock::duration>(kWaiterRecheck, deadline - Clock::now()));
    --waiters_;
  }
  std::unique_ptr<Spare> spare = std::move(ready_.front());
  ready_.pop_front();
  // The replacement: with another spare still ready and nobody waiting, it is forked
  // once this request's child has been reaped (RetireSpare, the reader), so no fork runs
  // beside a request. Measured on 2 CPUs (bench warm, 250/s): forking at once gave a run
  // phase of p50 0.21 ms but p99 0.81 ms, and the client's p99 2.2-3.0x its p50; forking
  // after the reap, p50 0.59-0.63 ms, p99 0.86 ms, p99/p50 1.5-1.7x, and 1,110 against
  // 1,055 requests/s under load. (A request on an otherwise idle VM runs slower than one
  // beside a fork; forking right after the reply instead delayed the HTTP write.)
  const bool replace_now = ready_.empty() || waiters_ > 0;
  lock.unlock();
  if (replace_now) TopUpSpares();
  return spare;
}

// Keeps ready + being forked at the configured number of spares, never more: a burst of
// requests is served as spares become free, not by forking without bound.
void Zygote::TopUpSpares() {
  int missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    missing = config_.spares + waiters_ - static_cast<int>(ready_.size() + spawning_.size());
  }
  for (int i = 0; i < missing; ++i) {
    if (!RequestSpare().ok()) return;
  }
}

// After a burst: spares beyond the configured number hold pre-faulted memory for nobody.
void Zygote::TrimSpares() {
  std::vector<std::unique_ptr<Spare>> surplus;
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle = waiters_ == 0;
    while (idle && static_cast<int>(ready_.size()) > config_.spares) {
      surplus.push_back(std::move(ready_.back()));
      ready_.pop_back();
    }
  }
  for (auto& spare : surplus) DestroySpare(std::move(spare));
  // Kept cgroups beyond what the spares will need again.
  if (idle) request_cgroups_.Trim(static_cast<size_t>(config_.spares));
}

void Zygote::KillSpare(Spare& spare) {
  // The spare itself through its pidfd as well as its cgroup: a zygote's code can answer
  // Join without joining, and such a spare must still die at its request's deadline.
  if (spare.pidfd.valid()) base::sys::RawPidfdSendSignal(spare.pidfd.get(), SIGKILL);
  if (spare.cgroup) {
    spare.cgroup->KillAll().IgnoreError();
  } else if (spare.pid > 0 && !spare.pidfd.valid()) {
    kill(spare.pid, SIGKILL);
  }
}

void Zygote::DestroySpare(std::unique_ptr<Spare> spare) {
  if (!spare) return;
  KillSpare(*spare);
  spare->channel.Reset();
  request_cgroups_.Return(std::move(spare->cgroup), spare->cgroup_reusable && !dead_.load());
}

void Zygote::RetireSpare(std::unique_ptr<Spare> spare) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto status = exit_status_.find(spare->id);
    if (status == exit_status_.end() && !dead_.load()) {
      spare->channel.Reset();
      retiring_[spare->id] = std::move(spare);
      return;
    }
    if (status != exit_status_.end()) exit_status_.erase(status);
  }
  DestroySpare(std::move(spare));
  TopUpSpares();
}

}  // namespace zygo::supervisor
