// A zygote's spares: taking one for a request, keeping their number at the configured
// count (more while requests wait), and closing for good when the zygote dies. Forking
// and destroying a spare are the zygote's own (SparePool::Host). Parent side; thread-safe.
#ifndef ZYGO_SUPERVISOR_SPARE_POOL_H_
#define ZYGO_SUPERVISOR_SPARE_POOL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "supervisor/cancel_signal.h"
#include "supervisor/zygote_spare.h"

namespace zygo::supervisor {

// Lock order: the pool's mu_ is a leaf. It is never held while calling the Host, and the
// zygote calls the pool with its own lock released, so the two never nest.
class SparePool {
 public:
  using Clock = std::chrono::steady_clock;

  // What only the zygote can do for its pool; called with the pool's lock released.
  class Host {
   public:
    virtual ~Host() = default;
    // Asks the agent to fork spare `id` (a Spawn); its Forked arrives at Claim and Offer.
    virtual absl::Status SendSpawn(uint64_t id) = 0;
    // Kills a spare and gives back its cgroup.
    virtual void DestroySpare(std::unique_ptr<Spare> spare) = 0;
  };

  // `spares`: how many are kept ready; `name`: the function's, for messages.
  SparePool(Host& host, int spares, std::string name);
  SparePool(const SparePool&) = delete;
  SparePool& operator=(const SparePool&) = delete;

  // A ready spare, waiting up to `wait_ms` for one (forking one more per waiting request)
  // unless `cancel` fires first. Unavailable once the pool is closed, with its reason.
  absl::StatusOr<std::unique_ptr<Spare>> Take(int64_t wait_ms, const CancelSignal& cancel);
  // Asks for spares until ready + being forked make the configured number plus one for
  // each waiting request.
  void TopUp();
  // Destroys ready spares beyond the configured number when nobody waits. True when
  // nobody waits (then kept request cgroups beyond the spares' need can go too).
  bool Trim();

  // A Forked for Spawn `id` arrived: when its Spawn was sent, or nullopt if the pool did
  // not ask for it (or no longer waits for it).
  std::optional<Clock::time_point> Claim(uint64_t id);
  // An admitted spare: ready if a request waits or the pool is short, else destroyed.
  void Offer(std::unique_ptr<Spare> spare);
  // A claimed spare was refused or could not be admitted: waiting requests ask again.
  void Lost();
  // The agent could not fork spare `id`: waiting requests ask again.
  void SpawnFailed(uint64_t id);

  // Closes the pool for good: waiting and later requests get Unavailable with `why`. The
  // ready spares are handed back for the caller to destroy once it has marked the zygote
  // dead, so that nobody sees a closed pool behind a zygote that still says it is alive
  // for as long as destroying takes. A later call changes nothing and returns none.
  [[nodiscard]] std::deque<std::unique_ptr<Spare>> Close(const std::string& why);
  // Replaces the reason a closed pool gives (the sandbox's own account of its end
  // arrives after the reader's "channel closed").
  void Explain(const std::string& why);
  // Why the pool was closed; empty while it is open.
  std::string close_reason() const;

 private:
  absl::Status RequestSpare();

  Host& host_;
  const int spares_;
  const std::string name_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;  // a spare is ready or was lost, or the pool closed
  std::deque<std::unique_ptr<Spare>> ready_;
  std::map<uint64_t, Clock::time_point> spawning_;  // Spawn sent, Forked not yet received
  uint64_t next_spare_id_ = 1;
  int waiters_ = 0;  // requests waiting for a spare
  bool closed_ = false;
  std::string close_reason_;  // why the sandbox ended or never started
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SPARE_POOL_H_
