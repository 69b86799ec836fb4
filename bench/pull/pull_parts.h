// The two measurements of `zygo bench pull`, each printing its set-up, a table against
// its peer, the other work on the host and the exact commands. Parent side; needs what
// RunPullBench needs (see pull_bench.h).
#ifndef ZYGO_BENCH_PULL_PULL_PARTS_H_
#define ZYGO_BENCH_PULL_PULL_PARTS_H_

#include "absl/status/status.h"
#include "bench/pull/pull_context.h"

namespace zygo::bench {

// Part 1: `zygo pull` of the image into a fresh store each run (cold) and into one that
// has it (warm), against skopeo copy + umoci unpack. Every run is checked to have done
// its work: the registry's log of zygo's requests, the unpacked root, an unchanged warm
// store.
absl::Status RunPullPart(const PullBenchContext& b);

// Part 2: a one-shot run of the workload in the image through `zygo run` (with
// ZYGO_BYTECODE=0 and with it unset) against bubblewrap on zygo's flattened root, after
// saying whether a first run builds a bytecode layer.
absl::Status RunOneShotPart(const PullBenchContext& b);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_PARTS_H_
