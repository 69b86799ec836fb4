#include "bench/cold/cold_report.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/cold/cold_variants.h"

namespace zygo::bench {
namespace {

std::string Ratio(double value, const CaseResult* peer, double peer_value) {
  if (peer == nullptr || peer_value <= 0) return "-";
  return absl::StrFormat("%.2fx", value / peer_value);
}

const char* VerdictName(BarVerdict verdict) {
  switch (verdict) {
    case BarVerdict::kMet:
      return "MET";
    case BarVerdict::kNotMet:
      return "NOT MET";
    case BarVerdict::kNotMeasured:
      return "NOT MEASURED";
  }
  return "?";
}

}  // namespace

std::string FormatTable(const std::vector<CaseResult>& results) {
  size_t width = 8;
  for (const CaseResult& r : results) width = std::max(width, r.workload.size());
  const int w = static_cast<int>(width);
  std::string table =
      absl::StrFormat("%-*s  %-7s %5s %9s %9s %9s %9s %10s %10s\n", w, "workload", "variant",
                      "runs", "p50 ms", "p90 ms", "p99 ms", "mean ms", "p50/bwrap", "p99/bwrap");
  for (const CaseResult& r : results) {
    const CaseResult* peer = FindCase(results, r.workload, kVariantBwrap);
    const Summary& s = r.summary;
    absl::StrAppendFormat(&table, "%-*s  %-7s %5d %9.2f %9.2f %9.2f %9.2f %10s %10s\n", w,
                          r.workload, r.variant, s.count, s.p50, s.p90, s.p99, s.mean,
                          Ratio(s.p50, peer, peer ? peer->summary.p50 : 0),
                          Ratio(s.p99, peer, peer ? peer->summary.p99 : 0));
  }
  return table;
}

std::string FormatOverheads(const std::vector<CaseResult>& results) {
  std::string line = "sandbox cost over bare, p50:";
  std::string last_workload;
  for (const CaseResult& r : results) {
    if (r.variant == kVariantBare || r.workload == last_workload) continue;
    last_workload = r.workload;
    const CaseResult* bare = FindCase(results, r.workload, kVariantBare);
    if (bare == nullptr) continue;
    absl::StrAppend(&line, line.back() == ':' ? " " : "; ", r.workload);
    for (const char* variant : {kVariantZygo, kVariantBwrap}) {
      const CaseResult* c = FindCase(results, r.workload, variant);
      if (c == nullptr) continue;
      absl::StrAppendFormat(&line, " %s %+.2f ms", variant, c->summary.p50 - bare->summary.p50);
    }
  }
  return line;
}

BarResult JudgeBar(const std::vector<CaseResult>& results, const std::string& why_unmeasured) {
  BarResult bar;
  std::string head =
      absl::StrFormat("bar: zygo %s p50 <= %.1fx bubblewrap: ", kBarWorkload, kBarMaxRatio);
  const CaseResult* zygo = FindCase(results, kBarWorkload, kVariantZygo);
  const CaseResult* peer = FindCase(results, kBarWorkload, kVariantBwrap);
  if (zygo == nullptr || peer == nullptr || peer->summary.p50 <= 0) {
    bar.line = absl::StrCat(head, VerdictName(bar.verdict), " (", why_unmeasured, ")");
    return bar;
  }
  const double ratio = zygo->summary.p50 / peer->summary.p50;
  bar.p50_ratio = ratio;
  bar.verdict = ratio <= kBarMaxRatio ? BarVerdict::kMet : BarVerdict::kNotMet;
  // The exact ratio is judged. Print enough digits that the figure agrees with the
  // verdict: 1.004 is NOT MET and must not read "1.00x".
  int digits = 2;
  while (digits < 6 && bar.verdict == BarVerdict::kNotMet &&
         std::stod(absl::StrFormat("%.*f", digits, ratio)) <= kBarMaxRatio) {
    ++digits;
  }
  bar.line = absl::StrFormat("%s%s (%.*fx)", head, VerdictName(bar.verdict), digits, ratio);
  return bar;
}

nlohmann::ordered_json ResultsToJson(const std::vector<CaseResult>& results, const BarResult& bar) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const CaseResult& r : results) {
    const Summary& s = r.summary;
    cases.push_back({{"workload", r.workload},
                     {"variant", r.variant},
                     {"runs", s.count},
                     {"p50_ms", s.p50},
                     {"p90_ms", s.p90},
                     {"p99_ms", s.p99},
                     {"mean_ms", s.mean},
                     {"min_ms", s.min},
                     {"max_ms", s.max},
                     {"samples_ms", r.samples_ms}});
  }
  nlohmann::ordered_json verdict = {{"workload", kBarWorkload},
                                    {"max_ratio", kBarMaxRatio},
                                    {"verdict", VerdictName(bar.verdict)},
                                    {"line", bar.line}};
  verdict["p50_ratio"] = bar.p50_ratio ? nlohmann::ordered_json(*bar.p50_ratio) : nullptr;
  return {{"cases", cases}, {"bar", verdict}};
}

}  // namespace zygo::bench
