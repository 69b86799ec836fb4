// Runs benchmark cases in turns, run by run, timing each and running untimed set-up and
// checks around every run. A case may be several commands in a row (skopeo copy, then
// umoci unpack): each is timed and the sample is their sum. Parent side.
#ifndef ZYGO_BENCH_COMMON_INTERLEAVED_H_
#define ZYGO_BENCH_COMMON_INTERLEAVED_H_

#include <signal.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/common/stats.h"
#include "bench/common/timed_spawn.h"

namespace zygo::bench {

struct TimedStep {
  std::string name;  // "skopeo copy"
  Command command;
  std::string shown;  // how to repeat it by hand: environment changes, then the command
};

struct InterleavedCase {
  std::string workload;
  std::string variant;
  std::vector<TimedStep> steps;  // at least one
  // Untimed, before every run (a fresh directory, sync); may be empty.
  std::function<absl::Status()> before;
  // Untimed, after every run whose steps all exited 0: proves the run did the work it
  // claims (a run that did nothing is fast and wrong) and cleans up; may be empty.
  std::function<absl::Status()> after;
};

struct InterleavedOptions {
  int runs = 1;
  int warmup = 0;
  int deadline_ms = 60'000;  // for each step; a step still running is killed, an error
  // Read between runs; once non-zero, measuring stops with a Cancelled error.
  const volatile sig_atomic_t* interrupted = nullptr;
};

struct MeasuredCase {
  CaseResult result;           // each sample is the sum of the steps' times
  std::vector<Summary> steps;  // one per step when there are several, else empty
};

// Runs every case warmup + runs times. Each round runs all cases, starting one case
// later than the round before, so each case takes every position in the order equally
// often and slow drift of the machine lands on all of them alike. A step that does not
// exit 0, or a failed `before`/`after`, ends the measuring: an average that includes
// failures measures nothing.
absl::StatusOr<std::vector<MeasuredCase>> MeasureInterleaved(
    const std::vector<InterleavedCase>& cases, const InterleavedOptions& options);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_INTERLEAVED_H_
