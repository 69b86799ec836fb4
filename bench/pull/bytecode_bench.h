// `zygo bench bytecode`: importing ten common modules in a Python image with and without
// its bytecode layer (images/bytecode_layer.h), through `zygo run`.
#ifndef ZYGO_BENCH_PULL_BYTECODE_BENCH_H_
#define ZYGO_BENCH_PULL_BYTECODE_BENCH_H_

namespace zygo::bench {

// Builds the image's bytecode root if the store lacks it (and reports what that cost),
// then runs the import workload `--runs` times each way, interleaved, after `--warmup`
// rounds, and prints the host, p50/p99 of the in-process import time and of the whole
// `zygo run`, and their ratios to stdout. `argv` starts after the word "bytecode".
// Returns 0, or 125 when nothing could be measured. Parent side; needs what `zygo run`
// needs, and the image (--image REF) in the store.
int RunBytecodeBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_BYTECODE_BENCH_H_
