// Per-window medians of a schedule's latencies, and their line in the warm bench's report.
#include "bench/common/steadiness.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "bench/common/stats.h"

namespace zygo::bench {
namespace {

constexpr double kRequestsPerSparseWindow = 50;

}  // namespace

absl::StatusOr<Steadiness> MeasureSteadiness(const std::vector<double>& latency_ms,
                                             const std::vector<int64_t>& sent_ns, int64_t window_ns,
                                             int min_requests) {
  if (latency_ms.size() != sent_ns.size()) {
    return absl::InvalidArgumentError("a latency for every send time is needed");
  }
  if (window_ns <= 0) return absl::InvalidArgumentError("the window must be positive");
  if (sent_ns.empty()) return absl::InvalidArgumentError("no requests");
  const int64_t origin = *std::min_element(sent_ns.begin(), sent_ns.end());
  std::map<int64_t, std::vector<double>> windows;
  for (size_t i = 0; i < sent_ns.size(); ++i) {
    windows[(sent_ns[i] - origin) / window_ns].push_back(latency_ms[i]);
  }
  Steadiness out;
  out.lowest_p50_ms = std::numeric_limits<double>::infinity();
  for (auto& [index, latencies] : windows) {
    if (static_cast<int>(latencies.size()) < min_requests) continue;
    std::sort(latencies.begin(), latencies.end());
    const double p50 = NearestRankPercentile(latencies, 50);
    out.lowest_p50_ms = std::min(out.lowest_p50_ms, p50);
    out.highest_p50_ms = std::max(out.highest_p50_ms, p50);
    ++out.windows;
  }
  if (out.windows == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no window of %.1f s held %d requests", window_ns / 1e9, min_requests));
  }
  return out;
}

int64_t SteadinessWindowNs(double rate) {
  const double seconds = rate > 0 ? std::max(1.0, kRequestsPerSparseWindow / rate) : 1.0;
  return static_cast<int64_t>(seconds * 1e9);
}

std::string FormatSteadiness(const std::string& schedule, int64_t window_ns, const Steadiness& zygo,
                             const Steadiness& peer) {
  auto side = [](const char* who, const Steadiness& s) {
    return absl::StrFormat("%s %.3f-%.3f ms (%.2fx, %d window%s)", who, s.lowest_p50_ms,
                           s.highest_p50_ms, s.spread(), s.windows, s.windows == 1 ? "" : "s");
  };
  return absl::StrFormat("%s, %g s windows: %s, %s", schedule, window_ns / 1e9, side("zygo", zygo),
                         side("peer", peer));
}

}  // namespace zygo::bench
