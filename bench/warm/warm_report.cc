// Tables, bar lines and the slope fit of the warm-path benches.
#include "bench/warm/warm_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zygo::bench {

std::string FormatLatencyTable(const std::vector<LatencyRow>& rows) {
  int who_width = 6;  // "zygo", "peer", "pool"; wider for "spawn peer"
  for (const LatencyRow& row : rows)
    who_width = std::max(who_width, static_cast<int>(row.who.size()));
  std::string out =
      absl::StrFormat("%-22s %-*s %8s %6s %9s %9s %9s %9s %8s\n", "schedule", who_width, "who",
                      "requests", "late", "p50 ms", "p90 ms", "p99 ms", "max ms", "p99/p50");
  for (const LatencyRow& row : rows) {
    const std::string late = row.late < 0 ? "-" : absl::StrCat(row.late);
    absl::StrAppendFormat(&out, "%-22s %-*s %8d %6s %9.3f %9.3f %9.3f %9.3f %7.2fx\n", row.schedule,
                          who_width, row.who, row.ms.count, late, row.ms.p50, row.ms.p90,
                          row.ms.p99, row.ms.max, row.ms.p50 > 0 ? row.ms.p99 / row.ms.p50 : 0);
  }
  return out;
}

absl::StatusOr<PhaseRow> SummarizePhases(const std::string& label, const PhaseSamples& samples) {
  PhaseRow row;
  row.label = label;
  absl::StatusOr<Summary> s;
  if (!(s = Summarize(samples.fork_us)).ok()) return s.status();
  row.fork = *s;
  if (!(s = Summarize(samples.admit_us)).ok()) return s.status();
  row.admit = *s;
  if (!(s = Summarize(samples.run_us)).ok()) return s.status();
  row.run = *s;
  if (!(s = Summarize(samples.reply_us)).ok()) return s.status();
  row.reply = *s;
  if (!(s = Summarize(samples.total_us)).ok()) return s.status();
  row.total = *s;
  return row;
}

std::string FormatPhaseTable(const std::vector<PhaseRow>& rows) {
  std::string out = absl::StrFormat("%-22s %-4s %9s %9s %9s %9s %9s\n", "phases (us)", "", "fork",
                                    "admit", "run", "reply", "total");
  for (const PhaseRow& row : rows) {
    absl::StrAppendFormat(&out, "%-22s %-4s %9.0f %9.0f %9.0f %9.0f %9.0f\n", row.label, "p50",
                          row.fork.p50, row.admit.p50, row.run.p50, row.reply.p50, row.total.p50);
    absl::StrAppendFormat(&out, "%-22s %-4s %9.0f %9.0f %9.0f %9.0f %9.0f\n", "", "p99",
                          row.fork.p99, row.admit.p99, row.run.p99, row.reply.p99, row.total.p99);
  }
  return out;
}

std::string BarLine(const Bar& bar) {
  const std::string value = bar.unit == "x" ? absl::StrFormat("%.2fx", bar.value)
                                            : absl::StrFormat("%.2f %s", bar.value, bar.unit);
  return absl::StrFormat("bar: %s: %s (%s)", bar.what, bar.pass() ? "PASS" : "FAIL", value);
}

std::string BarLine(const MinBar& bar) {
  return absl::StrFormat("bar: %s: %s (%.1fx)", bar.what, bar.pass() ? "PASS" : "FAIL", bar.value);
}

absl::StatusOr<LineFit> FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) {
    return absl::InvalidArgumentError("a line needs at least two points");
  }
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
  }
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx == 0) return absl::InvalidArgumentError("every x is the same: no slope");
  LineFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  return fit;
}

}  // namespace zygo::bench
