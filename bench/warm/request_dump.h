// `zygo bench warm --dump FILE`: every timed request as a line of CSV, so a tail can be
// read request by request (which side, when it was sent, how long the client waited and
// where the supervisor spent its part). Pure; the caller writes the text.
#ifndef ZYGO_BENCH_WARM_REQUEST_DUMP_H_
#define ZYGO_BENCH_WARM_REQUEST_DUMP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/warm/warm_driver.h"

namespace zygo::bench {

// One side of one schedule. `phases` is the supervisor's timings of the same requests in
// the same order, or null for a side that reports none (the peer).
struct DumpedRun {
  std::string schedule;
  std::string who;
  const OpenLoopResult* result = nullptr;
  const PhaseSamples* phases = nullptr;
};

// The CSV text: a header, then one line per request of each run in the order given.
// `sent_s` is seconds since `origin_ns`, so the runs' lines interleave by time when
// sorted on it. An error when a run's vectors disagree in length.
absl::StatusOr<std::string> FormatRequestDump(const std::vector<DumpedRun>& runs,
                                              int64_t origin_ns);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_REQUEST_DUMP_H_
