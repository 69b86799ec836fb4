// `zygo bench warm --runtime node`: a Node function (every request in a fresh worker
// started ahead of demand) against a node spawned per request and one long-lived node
// running each request in a new V8 context, on the spaced schedule: latency and CPU per
// request. See docs/bench-warm.md.
#ifndef ZYGO_BENCH_WARM_NODE_BENCH_H_
#define ZYGO_BENCH_WARM_NODE_BENCH_H_

#include "absl/status/statusor.h"
#include "bench/warm/warm_flags.h"
#include "bench/warm/warm_setup.h"

namespace zygo::bench {

// Registers function "node" (handler.js, `spares` 2) in `session`'s supervisor, waits
// until it is warm, starts both peers and measures the three in turns (A B C C B A
// halves); prints the tables, CPU per request, ratios and bars. Returns the number of
// failed bars. Parent side; needs what the supervisor needs, a supervisor that runs
// `runtime = "node"` on the host image, and `options.node` for the peers.
absl::StatusOr<int> MeasureNodeAgainstPeers(const WarmOptions& options, SupervisorSession& session);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_NODE_BENCH_H_
