// Which zygo binary a bench measures. The benches are their own binary, zygo-bench, that
// `zygo bench` execs; the zygo that did so names itself in $ZYGO_BENCH_ZYGO.
#ifndef ZYGO_BENCH_COMMON_MEASURED_ZYGO_H_
#define ZYGO_BENCH_COMMON_MEASURED_ZYGO_H_

#include <string>

#include "absl/status/statusor.h"

namespace zygo::bench {

// The environment variable `zygo bench` sets to its own path before it execs zygo-bench.
inline constexpr char kMeasuredZygoEnv[] = "ZYGO_BENCH_ZYGO";

// The resolved path of the zygo to measure: `flag` (a --zygo value) when given, else the
// zygo that forwarded here, else the zygo FindHelperBinary finds beside this binary. NotFound
// says how to name one.
absl::StatusOr<std::string> MeasuredZygo(const std::string& flag);

// Whether `zygo` is the binary that forwarded here, built with this one, so that this
// binary's compilation mode is its too.
bool IsForwardingZygo(const std::string& zygo);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_MEASURED_ZYGO_H_
