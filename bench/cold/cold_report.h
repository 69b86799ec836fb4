// Turns `zygo bench cold`'s samples into its table, its verdict on the bar, and JSON.
// Pure formatting; no I/O.
#ifndef ZYGO_BENCH_COLD_COLD_REPORT_H_
#define ZYGO_BENCH_COLD_COLD_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "bench/common/stats.h"
#include "nlohmann/json.hpp"

namespace zygo::bench {

// The bar: zygo's p50 on /bin/true at most this many times bubblewrap's.
inline constexpr double kBarMaxRatio = 1.0;
inline constexpr char kBarWorkload[] = "/bin/true";

enum class BarVerdict { kMet, kNotMet, kNotMeasured };

struct BarResult {
  BarVerdict verdict = BarVerdict::kNotMeasured;
  std::optional<double> p50_ratio;  // zygo p50 / bwrap p50 on kBarWorkload
  std::string line;                 // "bar: zygo /bin/true p50 <= 1.0x bubblewrap: MET (0.93x)"
};

// The table: one row per case with runs, p50, p90, p99 and mean in ms, and each
// row's p50 and p99 as a multiple of bubblewrap's for the same workload ("-" without
// a peer).
std::string FormatTable(const std::vector<CaseResult>& results);

// What each sandbox adds to the bare run, at p50 (start-up of the workload itself
// cancels out): "sandbox cost over bare, p50: /bin/true zygo +8.10 ms, bwrap +3.20 ms".
std::string FormatOverheads(const std::vector<CaseResult>& results);

// Judges the bar. Without a bwrap result the verdict is NOT MEASURED and the line
// says `why_unmeasured`.
BarResult JudgeBar(const std::vector<CaseResult>& results, const std::string& why_unmeasured);

nlohmann::ordered_json ResultsToJson(const std::vector<CaseResult>& results, const BarResult& bar);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COLD_COLD_REPORT_H_
