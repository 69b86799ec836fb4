// The throughput part of `zygo bench net`: bytes per second over one TCP connection from
// the fake internet's source to python on the machine directly and in sandboxes, the
// paths taking turns. Parent side; runs what it is given, needs nothing itself.
#ifndef ZYGO_BENCH_NET_NET_THROUGHPUT_H_
#define ZYGO_BENCH_NET_NET_THROUGHPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/common/timed_spawn.h"

namespace zygo::bench {

struct StreamPath {
  std::string label;  // "machine directly", "sandbox --net full", ...
  Command command;    // kMeasureScript's `stream ... BYTES`: prints "stream_ms X"
};

struct StreamSamples {
  std::string label;
  std::vector<double> mib_per_s;  // one per run
};

// `warmup` untimed rounds, then `runs` timed ones; in each round every path streams
// `bytes` once, the order rotating round by round.
absl::StatusOr<std::vector<StreamSamples>> MeasureStreams(const std::vector<StreamPath>& paths,
                                                          int runs, int warmup, int64_t bytes);

// The table: median and slowest MiB/s per path, and each median over the first path's.
absl::Status PrintStreams(const std::vector<StreamSamples>& samples, const std::string& what);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_NET_NET_THROUGHPUT_H_
