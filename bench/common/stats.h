// Summary statistics for benchmark samples (nearest-rank percentiles and the mean), and
// the cases they are taken of.
#ifndef ZYGO_BENCH_COMMON_STATS_H_
#define ZYGO_BENCH_COMMON_STATS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::bench {

// The nearest-rank percentile (no interpolation): the smallest sample such that at
// least `percent`% of the samples are <= it, i.e. sorted[ceil(percent/100 * n) - 1].
// Every reported value is therefore a time that was actually measured. With few
// samples the high percentiles are the maximum (with n = 5, p90 and p99 are both the
// largest sample). `sorted` must be ascending and non-empty; `percent` in [1, 100].
double NearestRankPercentile(const std::vector<double>& sorted, int percent);

struct Summary {
  int count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
};

// Summarises `samples` (any order). InvalidArgument when there are none.
absl::StatusOr<Summary> Summarize(std::vector<double> samples);

// One case of a bench: a workload run through one variant (zygo, a peer, bare).
struct CaseResult {
  std::string workload;
  std::string variant;
  std::vector<double> samples_ms;  // in the order they were taken
  Summary summary;
};

// The result for `workload` through `variant`, or nullptr.
const CaseResult* FindCase(const std::vector<CaseResult>& results, const std::string& workload,
                           const std::string& variant);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_STATS_H_
