// `zygo bench load`: sustained requests per second through one warm Python function, over
// several keep-alive connections in closed loops, against the prefork peer driven alike.
#ifndef ZYGO_BENCH_WARM_LOAD_BENCH_H_
#define ZYGO_BENCH_WARM_LOAD_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host (with nproc), a table and the PASS/FAIL line of
// the bar (>= 1,000 requests/s) to stdout; `argv` starts after the word "load" (flags:
// `zygo bench load --help`). Returns 0 when measured (1 with --strict on a FAIL), 125 when
// not. Parent side. Needs what the supervisor needs, and /usr/bin/python3 for the peer.
int RunLoadBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_LOAD_BENCH_H_
