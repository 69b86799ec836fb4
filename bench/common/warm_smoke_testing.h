// What the warm-path benches' smoke tests share: run `zygo bench NAME --quick ...` as root,
// match lines of its report, and check its supervisor's directory is gone afterwards.
#ifndef ZYGO_BENCH_COMMON_WARM_SMOKE_TESTING_H_
#define ZYGO_BENCH_COMMON_WARM_SMOKE_TESTING_H_

#include <string>
#include <vector>

#include "testing/harness.h"

namespace zygo::bench {

// True when `pattern` (ECMAScript regex) matches somewhere in `out`.
bool Has(const std::string& out, const std::string& pattern);

// Runs the real zygo with `args` after "bench", killing it after `timeout_seconds`.
testing::RunResult RunBench(const std::vector<std::string>& args, int timeout_seconds);

// Expects every "/tmp/zygo-bench-XXXXXX" or "/tmp/zygo-supervisor-XXXXXX" directory the
// report names to be gone, and at least one to be named.
void ExpectScratchDirsGone(const std::string& out);

// The "host: Linux ... nproc N" line every bench prints first.
inline constexpr char kHostLine[] = "(^|\n)host: Linux [^\n]+ nproc [0-9]+";

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_WARM_SMOKE_TESTING_H_
