#include "bench/pull/pull_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zygo::bench {
namespace {

std::string Ratio(double value, double peer_value) {
  if (peer_value <= 0) return "-";
  return absl::StrFormat("%.2fx", value / peer_value);
}

}  // namespace

std::string FormatPeerTable(const std::vector<CaseResult>& results,
                            const std::string& peer_variant) {
  size_t workload_width = 8, variant_width = 7;
  for (const CaseResult& r : results) {
    workload_width = std::max(workload_width, r.workload.size());
    variant_width = std::max(variant_width, r.variant.size());
  }
  const int w = static_cast<int>(workload_width);
  const int v = static_cast<int>(variant_width);
  std::string table =
      absl::StrFormat("%-*s  %-*s %5s %9s %9s %9s %9s %9s %9s\n", w, "workload", v, "variant",
                      "runs", "p50 ms", "p90 ms", "p99 ms", "mean ms", "p50/peer", "p99/peer");
  for (const CaseResult& r : results) {
    const CaseResult* peer = FindCase(results, r.workload, peer_variant);
    const Summary& s = r.summary;
    absl::StrAppendFormat(&table, "%-*s  %-*s %5d %9.2f %9.2f %9.2f %9.2f %9s %9s\n", w, r.workload,
                          v, r.variant, s.count, s.p50, s.p90, s.p99, s.mean,
                          peer ? Ratio(s.p50, peer->summary.p50) : "-",
                          peer ? Ratio(s.p99, peer->summary.p99) : "-");
  }
  return table;
}

std::string FormatSteps(const std::string& variant, const std::vector<std::string>& names,
                        const std::vector<Summary>& steps) {
  if (steps.empty() || names.size() != steps.size()) return "";
  std::string line = absl::StrCat(variant, " by step, p50 / p99:");
  for (size_t i = 0; i < steps.size(); ++i) {
    absl::StrAppendFormat(&line, "%s %s %.2f / %.2f ms", i == 0 ? "" : ",", names[i], steps[i].p50,
                          steps[i].p99);
  }
  return line;
}

}  // namespace zygo::bench
