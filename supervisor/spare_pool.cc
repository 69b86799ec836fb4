// A zygote's spares: taking one for a request, keeping their number at the configured
// count (more while requests wait), and closing when the zygote dies. The zygote forks,
// admits, retires and destroys them (zygote.cc); a request's run is in request_run.cc.
#include "supervisor/spare_pool.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zygo::supervisor {
namespace {

// How long a request waiting for a spare sleeps before it looks at its cancel again.
constexpr auto kWaiterRecheck = std::chrono::milliseconds(25);

}  // namespace

SparePool::SparePool(Host& host, int spares, std::string name)
    : host_(host), spares_(spares), name_(std::move(name)) {}

absl::StatusOr<std::unique_ptr<Spare>> SparePool::Take(int64_t wait_ms,
                                                       const CancelSignal& cancel) {
  auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (closed_) {
      return absl::UnavailableError(absl::StrCat("the zygote of ", name_, " died (", close_reason_,
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
    TopUp();
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
  // once this request's child has been reaped (Zygote::RetireSpare, the reader), so no
  // fork runs beside a request. Measured on 2 CPUs (bench warm, 250/s): forking at once
  // gave a run phase of p50 0.21 ms but p99 0.81 ms, and the client's p99 2.2-3.0x its
  // p50; forking after the reap, p50 0.59-0.63 ms, p99 0.86 ms, p99/p50 1.5-1.7x, and
  // 1,110 against 1,055 requests/s under load. (A request on an otherwise idle VM runs
  // slower than one beside a fork; forking right after the reply instead delayed the HTTP
  // write.)
  const bool replace_now = ready_.empty() || waiters_ > 0;
  lock.unlock();
  if (replace_now) TopUp();
  return spare;
}

// Keeps ready + being forked at the configured number of spares, never more: a burst of
// requests is served as spares become free, not by forking without bound.
void SparePool::TopUp() {
  int missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    missing = spares_ + waiters_ - static_cast<int>(ready_.size() + spawning_.size());
  }
  for (int i = 0; i < missing; ++i) {
    if (!RequestSpare().ok()) return;
  }
}

absl::Status SparePool::RequestSpare() {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return absl::UnavailableError("the zygote is gone");
    id = next_spare_id_++;
    spawning_[id] = Clock::now();
  }
  return host_.SendSpawn(id);
}

// After a burst: spares beyond the configured number hold pre-faulted memory for nobody.
bool SparePool::Trim() {
  std::vector<std::unique_ptr<Spare>> surplus;
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle = waiters_ == 0;
    while (idle && static_cast<int>(ready_.size()) > spares_) {
      surplus.push_back(std::move(ready_.back()));
      ready_.pop_back();
    }
  }
  for (auto& spare : surplus) host_.DestroySpare(std::move(spare));
  return idle;
}

std::optional<SparePool::Clock::time_point> SparePool::Claim(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto sent = spawning_.find(id);
  if (sent == spawning_.end()) return std::nullopt;
  Clock::time_point sent_at = sent->second;
  spawning_.erase(sent);
  return sent_at;
}

void SparePool::Offer(std::unique_ptr<Spare> spare) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Closed meanwhile: dropping it closes its channel; its zygote is gone.
    if (closed_) {
      ready_cv_.notify_all();
      return;
    }
    // Forked for a request that has been served meanwhile: not needed, unless short.
    if (waiters_ > 0 || static_cast<int>(ready_.size()) < spares_) {
      ready_.push_back(std::move(spare));
      ready_cv_.notify_one();
      return;
    }
  }
  host_.DestroySpare(std::move(spare));
  Lost();
}

void SparePool::Lost() { ready_cv_.notify_all(); }

void SparePool::SpawnFailed(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spawning_.erase(id) > 0) ready_cv_.notify_all();
}

std::deque<std::unique_ptr<Spare>> SparePool::Close(const std::string& why) {
  std::deque<std::unique_ptr<Spare>> spares;
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return spares;
  closed_ = true;
  close_reason_ = why;
  spares.swap(ready_);
  ready_cv_.notify_all();
  return spares;
}

void SparePool::Explain(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  close_reason_ = why;
}

std::string SparePool::close_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return close_reason_;
}

}  // namespace zygo::supervisor
