// The warm-path benches' report: latency and phase tables, PASS/FAIL bar lines and the
// least-squares slope. Pure formatting and arithmetic; no I/O.
#ifndef ZYGO_BENCH_WARM_WARM_REPORT_H_
#define ZYGO_BENCH_WARM_WARM_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/common/stats.h"
#include "bench/warm/warm_driver.h"

namespace zygo::bench {

struct LatencyRow {
  std::string schedule;  // "250/s open loop"
  std::string who;       // "zygo", "peer", "pool"
  Summary ms;            // client-side latency
  int late = 0;          // -1: not applicable (closed loop)
};

// One row per schedule and side: requests, late, p50, p90, p99 and max in ms, p99/p50.
std::string FormatLatencyTable(const std::vector<LatencyRow>& rows);

struct PhaseRow {
  std::string label;                       // "250/s open loop"
  Summary fork, admit, run, reply, total;  // microseconds
};

absl::StatusOr<PhaseRow> SummarizePhases(const std::string& label, const PhaseSamples& samples);

// Two lines per row (p50, p99), one column per phase, in microseconds.
std::string FormatPhaseTable(const std::vector<PhaseRow>& rows);

struct Bar {
  std::string what;  // "warm p50 <= 0.6x peer p50 (250/s open loop)"
  double value = 0;  // the measured ratio
  double limit = 0;
  std::string unit = "x";  // or a unit such as "ms"
  bool pass() const { return value <= limit; }
};

// "bar: warm p50 <= 0.6x peer p50 (250/s open loop): PASS (0.42x)"; with unit "ms",
// "bar: zygo CPU per request <= 12 ms: PASS (9.80 ms)".
std::string BarLine(const Bar& bar);

// For bars whose value must be at least the limit (bwrap / zygo exec >= 40x).
struct MinBar {
  std::string what;
  double value = 0;
  double limit = 0;
  bool pass() const { return value >= limit; }
};
std::string BarLine(const MinBar& bar);

// The least-squares line y = slope * x + intercept through the points. InvalidArgument
// with fewer than two points or when every x is the same.
struct LineFit {
  double slope = 0;
  double intercept = 0;
};
absl::StatusOr<LineFit> FitLine(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_REPORT_H_
