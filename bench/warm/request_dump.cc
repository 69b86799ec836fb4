// The --dump CSV of the warm benches: see request_dump.h.
#include "bench/warm/request_dump.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zygo::bench {

absl::StatusOr<std::string> FormatRequestDump(const std::vector<DumpedRun>& runs,
                                              int64_t origin_ns) {
  std::string csv =
      "schedule,who,request,sent_s,latency_ms,fork_us,admit_us,run_us,reply_us,total_us\n";
  for (const DumpedRun& run : runs) {
    const OpenLoopResult& r = *run.result;
    const size_t n = r.latency_ms.size();
    const bool phases_match = run.phases == nullptr || run.phases->total_us.size() == n;
    if (r.sent_ns.size() != n || !phases_match) {
      return absl::InternalError(absl::StrCat("dump: ", run.who, " (", run.schedule, ") has ", n,
                                              " latencies but not as many send times or timings"));
    }
    for (size_t k = 0; k < n; ++k) {
      absl::StrAppendFormat(&csv, "%s,%s,%d,%.6f,%.3f", run.schedule, run.who, k + 1,
                            (r.sent_ns[k] - origin_ns) / 1e9, r.latency_ms[k]);
      if (run.phases != nullptr) {
        const PhaseSamples& p = *run.phases;
        absl::StrAppendFormat(&csv, ",%.0f,%.0f,%.0f,%.0f,%.0f\n", p.fork_us[k], p.admit_us[k],
                              p.run_us[k], p.reply_us[k], p.total_us[k]);
      } else {
        csv += ",,,,,\n";
      }
    }
  }
  return csv;
}

}  // namespace zygo::bench
