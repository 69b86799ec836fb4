// What the two parts of `zygo bench pull` share: the tools measured, the test image and
// the registry serving it, the scratch directory, the host. Plain data; the owner
// (RunPullBench) keeps the registry and the scratch directory alive for both parts.
#ifndef ZYGO_BENCH_PULL_PULL_CONTEXT_H_
#define ZYGO_BENCH_PULL_PULL_CONTEXT_H_

#include <signal.h>

#include <string>
#include <vector>

#include "bench/common/host_info.h"
#include "bench/common/scratch_dir.h"
#include "bench/pull/local_registry.h"
#include "bench/pull/pull_flags.h"

namespace zygo::bench {

// The image, and what runs in it.
struct PullWorkload {
  std::string image;              // test image name, and repository in the registry
  std::vector<std::string> argv;  // the one-shot command
  std::string probe_file;         // present in an unpacked root: proves it was unpacked
};

// Absolute paths, checked to exist.
struct PullTools {
  std::string zygo, bwrap, skopeo, umoci;
  std::string tree;  // holds testing/registry and tools/images
};

struct PullBenchContext {
  PullOptions options;
  PullTools tools;
  PullWorkload workload;
  HostInfo host;
  std::vector<std::string> caller_env;
  const ScratchDir* scratch = nullptr;
  const LocalRegistry* registry = nullptr;
  TestImage image;
  std::string reference;  // the image in the registry: "127.0.0.1:PORT/python:bench"
  std::string tag;        // "bench"
  // Set by a signal handler; measuring stops at the next run once it is non-zero.
  const volatile sig_atomic_t* interrupted = nullptr;
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_CONTEXT_H_
