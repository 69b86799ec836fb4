// How the warm benches send requests and time them: an open-loop schedule on one
// connection, closed loops on several, the host's bare fork()+wait() floor, and the
// checks that every reply is the handler's. Parent side; no privileges.
#ifndef ZYGO_BENCH_WARM_WARM_DRIVER_H_
#define ZYGO_BENCH_WARM_WARM_DRIVER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace zygo::bench {

// One request: sends request `index` and returns its reply's body (an error when no
// reply came or it was not a success at the transport level).
using CallFn = std::function<absl::StatusOr<std::string>(int index)>;

struct OpenLoopResult {
  std::vector<double> latency_ms;    // send to whole reply, client clock (CLOCK_MONOTONIC)
  std::vector<int64_t> sent_ns;      // each request's send time, CLOCK_MONOTONIC
  std::vector<std::string> replies;  // in order, for checking after the clock stopped
  int late = 0;                      // sent after their slot: the reply before came late
  double seconds = 0;
};

// Request k (k = 0..requests-1, index first_index + k) is due at start + k / rate; it is
// sent then, or at once when the reply before it came after that (one connection, one
// request at a time). Latency is from the send to the reply, so a late start is counted
// in `late`, never in the next request's time.
absl::StatusOr<OpenLoopResult> RunOpenLoop(int first_index, int requests, double rate_per_s,
                                           const CallFn& call);

// Adds `part`'s requests after `into`'s (a schedule run in parts, sides taking turns).
void AppendOpenLoop(OpenLoopResult* into, OpenLoopResult part);

struct ClosedLoopResult {
  std::vector<double> latency_ms;
  int64_t completed = 0;
  double seconds = 0;  // from the first send to the last reply
};

// `connections` threads, each with its own CallFn from `make_call(thread)`, each sending
// its next request as soon as the last one's reply came, for `seconds`. The first error
// stops every thread and is returned.
absl::StatusOr<ClosedLoopResult> RunClosedLoop(
    int connections, double seconds, const std::function<absl::StatusOr<CallFn>(int)>& make_call);

// `forks` rounds of fork() + _exit(0) in the child + waitpid() by this process, each
// timed in microseconds: what the machine needs for a bare fork, next to which the warm
// path's numbers are read.
absl::StatusOr<std::vector<double>> MeasureForkFloor(int forks);

// The supervisor's per-phase timings of a run of replies, in microseconds.
struct PhaseSamples {
  std::vector<double> fork_us, admit_us, run_us, reply_us, total_us;
};

// Checks each reply of the supervisor's exec API (ok true, and `matches(result, k)` for the
// k-th) and collects its timings_us. The first bad reply is an error that quotes it.
absl::Status CheckExecReplies(const std::vector<std::string>& replies,
                              const std::function<bool(const nlohmann::json&, int)>& matches,
                              PhaseSamples* phases);

// The same for the prefork peer's replies ({"ok": true, "result": ...}).
absl::Status CheckPeerReplies(const std::vector<std::string>& replies,
                              const std::function<bool(const nlohmann::json&, int)>& matches);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_DRIVER_H_
