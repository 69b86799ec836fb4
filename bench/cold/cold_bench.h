// `zygo bench cold`: the cost of a one-shot sandbox from start to finish, measured
// against bubblewrap (the peer) and a bare run (the floor).
#ifndef ZYGO_BENCH_COLD_COLD_BENCH_H_
#define ZYGO_BENCH_COLD_COLD_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, a table and the verdict on the bar to
// stdout; `argv` starts after the word "cold" (flags: see `zygo bench cold --help`).
// Returns zygo's exit code: 0 bar met or not judged (--no-peer), 1 bar not met, 125
// when nothing could be measured. Parent side. Needs what `zygo run` needs (root or
// user namespaces, a cgroup) and, for the peer, a working bubblewrap.
int RunColdBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COLD_COLD_BENCH_H_
