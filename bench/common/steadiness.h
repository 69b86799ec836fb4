// How steady the host was while one side ran a schedule: the schedule cut into windows by
// send time, and the lowest and highest median latency among them. A wide spread says the
// host's own speed moved during the run (on a shared VM, other tenants and the hypervisor);
// a p99 taken over such a run says as much about the host as about what was measured.
#ifndef ZYGO_BENCH_COMMON_STEADINESS_H_
#define ZYGO_BENCH_COMMON_STEADINESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::bench {

struct Steadiness {
  int windows = 0;  // windows with enough requests to count
  double lowest_p50_ms = 0;
  double highest_p50_ms = 0;
  double spread() const { return lowest_p50_ms > 0 ? highest_p50_ms / lowest_p50_ms : 0; }
};

// Windows of `window_ns` from the first send; a window with fewer than `min_requests` is
// skipped (a schedule run in halves leaves a part-filled window at each edge).
// InvalidArgument when the vectors differ in size or no window has enough requests.
absl::StatusOr<Steadiness> MeasureSteadiness(const std::vector<double>& latency_ms,
                                             const std::vector<int64_t>& sent_ns, int64_t window_ns,
                                             int min_requests);

// The window for a schedule of `rate` requests per second: a second, or long enough to
// hold 50 requests when they are sparser than that.
int64_t SteadinessWindowNs(double rate);

// "250/s open loop, 1 s windows: zygo 0.240-0.290 ms (1.21x, 12 windows), peer
// 1.240-1.290 ms (1.04x, 12 windows)".
std::string FormatSteadiness(const std::string& schedule, int64_t window_ns, const Steadiness& zygo,
                             const Steadiness& peer);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_STEADINESS_H_
