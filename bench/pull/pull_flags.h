// Parses `zygo bench pull [flags]`.
#ifndef ZYGO_BENCH_PULL_PULL_FLAGS_H_
#define ZYGO_BENCH_PULL_PULL_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"

namespace zygo::bench {

struct PullOptions {
  int pull_runs = 10;      // measured runs of each pull case (pulls are slow)
  int pull_warmup = 1;     // discarded runs of each pull case, first
  int oneshot_runs = 100;  // measured runs of each one-shot case
  int oneshot_warmup = 5;  // discarded runs of each one-shot case, first
  bool no_python = false;  // busybox instead of the python image: fast, for smoke tests
  std::string zygo;        // the zygo binary measured; empty: MeasuredZygo's choice
  std::string bwrap = "/usr/bin/bwrap";
  std::string skopeo = "/usr/bin/skopeo";
  std::string umoci = "/usr/bin/umoci";
  // The source tree holding testing/registry/ and tools/images/ (empty: chosen at run
  // time, see DefaultTree()).
  std::string tree;
  bool help = false;
};

// `argv` starts after the word "pull". Accepts "--flag VALUE" and "--flag=VALUE".
// --runs N sets the runs of both parts; --pull-runs and --oneshot-runs set one part
// each (whichever comes last wins); --warmup N sets the warm-up of both parts.
absl::StatusOr<PullOptions> ParsePullFlags(int argc, char** argv);

// The tree when --tree is not given: $BUILD_WORKSPACE_DIRECTORY (set by `bazel run`),
// else the current directory.
std::string DefaultTree();

// The text `zygo bench pull --help` prints.
const char* PullUsage();

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_PULL_FLAGS_H_
