// `zygo bench pull`: pulling and unpacking an OCI image from a local registry (cold and
// with the store warm) against skopeo copy + umoci unpack, and a one-shot run in that
// image through zygo against bubblewrap on the same root.
#ifndef ZYGO_BENCH_PULL_PULL_BENCH_H_
#define ZYGO_BENCH_PULL_PULL_BENCH_H_

namespace zygo::bench {

// Runs the benchmark and prints the host, what was measured and how, and a table per
// part to stdout; `argv` starts after the word "pull" (flags: `zygo bench pull --help`).
// Starts a registry on 127.0.0.1 and makes temporary directories, and removes all of
// them on every exit, including SIGINT, SIGTERM and SIGHUP (the registry also stops if
// this process is killed outright). Returns 0 when everything was measured, 125 when it
// could not be. Parent side. Needs what `zygo run` needs (root or user namespaces, a
// cgroup), docker-registry, skopeo, umoci and bubblewrap, and the source tree's
// testing/registry and tools/images scripts.
int RunPullBench(int argc, char** argv);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_BENCH_H_
