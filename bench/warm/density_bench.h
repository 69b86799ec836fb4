// `zygo bench density`: the memory (PSS) of N warm functions against one runtime pool
// holding N scripts, and what one more of each costs (a least-squares slope).
#ifndef ZYGO_BENCH_WARM_DENSITY_BENCH_H_
#define ZYGO_BENCH_WARM_DENSITY_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, a table per checkpoint, both slopes and the
// PASS/FAIL line of the bar (the pool's slope about 0 kB per script) to stdout; `argv`
// starts after the word "density" (flags: `zygo bench density --help`). Returns 0 when
// measured (1 with --strict on a FAIL), 125 when not. Parent side. Needs what the
// supervisor needs, and root (or the supervisor's user) to read its sandboxes' smaps.
int RunDensityBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_DENSITY_BENCH_H_
