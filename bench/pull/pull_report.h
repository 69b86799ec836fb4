// Formats `zygo bench pull`'s results: a table with each case as a multiple of a named
// peer, and a peer's time split by step. Pure formatting; no I/O.
#ifndef ZYGO_BENCH_PULL_PULL_REPORT_H_
#define ZYGO_BENCH_PULL_PULL_REPORT_H_

#include <string>
#include <vector>

#include "bench/common/stats.h"

namespace zygo::bench {

// One row per case: runs, p50, p90, p99 and mean in ms, and p50 and p99 as a multiple
// of `peer_variant`'s for the same workload ("-" when there is none).
std::string FormatPeerTable(const std::vector<CaseResult>& results,
                            const std::string& peer_variant);

// "skopeo+umoci by step, p50 / p99: skopeo copy 250.10 / 300.20 ms, umoci unpack ..."
// `names` and `steps` are parallel; empty when there are no steps.
std::string FormatSteps(const std::string& variant, const std::vector<std::string>& names,
                        const std::vector<Summary>& steps);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_REPORT_H_
