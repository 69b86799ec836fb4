#include "bench/common/interleaved.h"

#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/base/sys/wait_status.h"

namespace zygo::bench {
namespace {

std::string RunLabel(const InterleavedCase& c, int round, int warmup) {
  std::string which = round < warmup ? absl::StrCat("warm-up run ", round + 1)
                                     : absl::StrCat("run ", round - warmup + 1);
  return absl::StrCat(which, " of '", c.workload, "' through ", c.variant);
}

absl::Status WithLabel(const absl::Status& status, const std::string& label) {
  return absl::Status(status.code(), absl::StrCat(label, ": ", status.message()));
}

// One timed step; a step that does not exit 0 is an error that says how to repeat it.
absl::StatusOr<double> RunStep(const TimedStep& step, int deadline_ms, const std::string& label) {
  absl::StatusOr<TimedRun> run = RunTimed(step.command, deadline_ms);
  if (!run.ok()) {
    return absl::Status(run.status().code(),
                        absl::StrCat(label, ", ", step.name, ": ", run.status().message(),
                                     "\n  command: ", step.shown));
  }
  if (!WIFEXITED(run->wait_status) || WEXITSTATUS(run->wait_status) != 0) {
    return absl::AbortedError(
        absl::StrCat(label, ", ", step.name, " ", base::sys::DescribeWaitStatus(run->wait_status),
                     "; a failing run is never averaged in, so the bench stops here.\n"
                     "  Repeat it by hand to see its error: ",
                     step.shown));
  }
  return run->ms;
}

// One run of one case: `before`, every step timed, `after`. Returns each step's time.
absl::StatusOr<std::vector<double>> RunCase(const InterleavedCase& c, int round,
                                            const InterleavedOptions& options) {
  const std::string label = RunLabel(c, round, options.warmup);
  if (c.before) {
    if (absl::Status ready = c.before(); !ready.ok()) return WithLabel(ready, label);
  }
  std::vector<double> step_ms;
  for (const TimedStep& step : c.steps) {
    ZYGO_ASSIGN_OR_RETURN(double ms, RunStep(step, options.deadline_ms, label));
    step_ms.push_back(ms);
  }
  if (c.after) {
    if (absl::Status checked = c.after(); !checked.ok()) return WithLabel(checked, label);
  }
  return step_ms;
}

bool Interrupted(const InterleavedOptions& options) {
  return options.interrupted != nullptr && *options.interrupted != 0;
}

}  // namespace

absl::StatusOr<std::vector<MeasuredCase>> MeasureInterleaved(
    const std::vector<InterleavedCase>& cases, const InterleavedOptions& options) {
  std::vector<MeasuredCase> measured;
  std::vector<std::vector<std::vector<double>>> step_samples;  // [case][step][run]
  for (const InterleavedCase& c : cases) {
    if (c.steps.empty()) return absl::InvalidArgumentError(c.variant + ": no steps");
    measured.push_back({CaseResult{c.workload, c.variant, {}, {}}, {}});
    step_samples.emplace_back(c.steps.size());
  }
  const int n = static_cast<int>(cases.size());
  for (int round = 0; round < options.warmup + options.runs; ++round) {
    for (int k = 0; k < n; ++k) {
      if (Interrupted(options)) return absl::CancelledError("interrupted; nothing was reported");
      const int index = (round + k) % n;
      absl::StatusOr<std::vector<double>> step_ms_or = RunCase(cases[index], round, options);
      // The terminal's Ctrl-C reaches the measured command too; its death is then the
      // interruption, not a failure of the command.
      if (Interrupted(options)) return absl::CancelledError("interrupted; nothing was reported");
      if (!step_ms_or.ok()) return step_ms_or.status();
      const std::vector<double>& step_ms = *step_ms_or;
      if (round < options.warmup) continue;
      double total = 0;
      for (size_t s = 0; s < step_ms.size(); ++s) {
        step_samples[index][s].push_back(step_ms[s]);
        total += step_ms[s];
      }
      measured[index].result.samples_ms.push_back(total);
    }
  }
  for (int index = 0; index < n; ++index) {
    MeasuredCase& m = measured[index];
    ZYGO_ASSIGN_OR_RETURN(m.result.summary, Summarize(m.result.samples_ms));
    if (step_samples[index].size() < 2) continue;
    for (const std::vector<double>& samples : step_samples[index]) {
      ZYGO_ASSIGN_OR_RETURN(Summary summary, Summarize(samples));
      m.steps.push_back(summary);
    }
  }
  return measured;
}

}  // namespace zygo::bench
