// `zygo bench embed`: the embedder's benchmark. One import-heavy script per call, as
// `zygo exec` of a warm function, `zygo run` one-shot and bubblewrap one-shot.
#ifndef ZYGO_BENCH_WARM_EMBED_BENCH_H_
#define ZYGO_BENCH_WARM_EMBED_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, a table and the PASS/FAIL line of the bar
// (bubblewrap / zygo exec >= 40x at p50) to stdout; `argv` starts after the word "embed"
// (flags: `zygo bench embed --help`). Returns 0 when measured (1 with --strict on a
// FAIL), 125 when not. Parent side. Needs what the supervisor and `zygo run` need,
// bubblewrap and /usr/bin/python3.
int RunEmbedBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_EMBED_BENCH_H_
