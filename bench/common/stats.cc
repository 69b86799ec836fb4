#include "bench/common/stats.h"

#include <algorithm>
#include <numeric>

namespace zygo::bench {

double NearestRankPercentile(const std::vector<double>& sorted, int percent) {
  const long n = static_cast<long>(sorted.size());
  // ceil(percent * n / 100) in integers: 0.99 * 200 in floating point is not exactly
  // 198, and a rank off by one here is a different sample.
  long rank = (static_cast<long>(percent) * n + 99) / 100;
  rank = std::clamp(rank, 1L, n);
  return sorted[rank - 1];
}

absl::StatusOr<Summary> Summarize(std::vector<double> samples) {
  if (samples.empty()) return absl::InvalidArgumentError("no samples to summarise");
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.count = static_cast<int>(samples.size());
  s.p50 = NearestRankPercentile(samples, 50);
  s.p90 = NearestRankPercentile(samples, 90);
  s.p99 = NearestRankPercentile(samples, 99);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

const CaseResult* FindCase(const std::vector<CaseResult>& results, const std::string& workload,
                           const std::string& variant) {
  for (const CaseResult& result : results) {
    if (result.workload == workload && result.variant == variant) return &result;
  }
  return nullptr;
}

}  // namespace zygo::bench
