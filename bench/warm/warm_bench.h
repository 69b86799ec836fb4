// `zygo bench warm`: the warm path of a Python function over the supervisor's HTTP API,
// with its phase breakdown, against the host's fork() floor and a plain Python server that
// forks per request; with --pool, a runtime pool against a warm function; with --runtime
// node, a Node function against two Node peers (node_bench.h).
#ifndef ZYGO_BENCH_WARM_WARM_BENCH_H_
#define ZYGO_BENCH_WARM_WARM_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, the tables and one PASS/FAIL line per bar to
// stdout; `argv` starts after the word "warm" (flags: `zygo bench warm --help`). Starts
// and stops its own supervisor (and peer). Returns 0 when everything was measured (1 with
// --strict when a bar FAILs), 125 when it could not be measured. Parent side. Needs what
// the supervisor needs (root, or a delegated cgroup) and /usr/bin/python3 for the peer
// (/usr/bin/node for --runtime node's).
int RunWarmBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_BENCH_H_
