#include "bench/pull/pull_flags.h"

#include <stdlib.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/common/flag_set.h"

namespace zygo::bench {
absl::StatusOr<PullOptions> ParsePullFlags(int argc, char** argv) {
  PullOptions options;
  FlagSet flags("pull");
  // --runs sets both parts and --warmup both warm-ups; as with every flag, the last wins.
  flags.Count("--runs", [&](int n) { options.pull_runs = options.oneshot_runs = n; })
      .Count(
          "--warmup", [&](int n) { options.pull_warmup = options.oneshot_warmup = n; }, 0)
      .Count("--pull-runs", &options.pull_runs)
      .Count("--oneshot-runs", &options.oneshot_runs)
      .Text("--zygo", &options.zygo)
      .Text("--bwrap", &options.bwrap)
      .Text("--skopeo", &options.skopeo)
      .Text("--umoci", &options.umoci)
      .Text("--tree", &options.tree)
      .Switch("--no-python", &options.no_python);
  if (absl::Status parsed = flags.Parse(argc, argv, &options.help); !parsed.ok()) return parsed;
  return options;
}

std::string DefaultTree() {
  const char* workspace = getenv("BUILD_WORKSPACE_DIRECTORY");
  return workspace != nullptr && *workspace != '\0' ? workspace : ".";
}

const char* PullUsage() {
  return R"(Usage: zygo bench pull [flags]

Two measurements of OCI images, each against a peer in the same run, the cases
taking turns run by run so drift in the machine hits all of them alike:

1. Pull and unpack of the python test image (tools/images/build python) from a
   registry on 127.0.0.1 that the bench starts (testing/registry/serve anonymous)
   and stops on every exit:
     zygo cold     `zygo pull --tls-verify=false REG/python:bench` into a fresh,
                   empty store each run
     zygo warm     the same pull into a store that has the image: nothing to
                   fetch or unpack, but the manifest is still fetched and checked
     skopeo+umoci  `skopeo copy` to a fresh OCI layout, then `umoci unpack
                   --rootless` of it (the peer; both steps are timed, summed)
2. A one-shot `python3 -c pass` in that image: `zygo run` (image loaded into a
   store) against bubblewrap on the same flattened root from zygo's store.

The zygo pulls run with ZYGO_BYTECODE=0 (fetch and unpack only, as the peer
does). `zygo run` is measured both with ZYGO_BYTECODE=0 (the same root as
bubblewrap) and with it unset; the report says whether a first run built a
bytecode layer, and so whether the two differ.

Every run is timed from spawn to reap with a monotonic clock, stdin, stdout and
stderr on /dev/null. Work between runs (fresh directories, sync(1), checks that
each run did its work, removal) is not timed. Nothing is left behind: the
registry and every temporary directory are removed on every exit, Ctrl-C and
SIGTERM included. Killed outright (SIGKILL), the registry still stops; the
scratch directory, whose path the report prints, is left.

Flags:
      --runs N          runs of every case in both parts
      --pull-runs N     runs of each pull case (default 10)
      --oneshot-runs N  runs of each one-shot case (default 100)
      --warmup N        runs first, of each case, not counted (default 1 for
                        pulls, 5 for one-shot runs)
      --no-python       use the busybox test image and `true` instead (fast; for
                        smoke tests, not a measurement to publish)
      --tree DIR        the source tree with testing/registry and tools/images
                        (default $BUILD_WORKSPACE_DIRECTORY, else .)
      --zygo PATH       the zygo binary to measure (default: this one)
      --bwrap PATH      bubblewrap (default /usr/bin/bwrap)
      --skopeo PATH     skopeo (default /usr/bin/skopeo)
      --umoci PATH      umoci (default /usr/bin/umoci)
  -h, --help            this text

Percentiles are nearest-rank: each is a time some run actually took.

Exit codes: 0 measured; 125 nothing could be measured (a failed run, a missing
tool, a bad flag, an interruption). A run that fails stops the bench: failures
are never averaged in.
)";
}

}  // namespace zygo::bench
