#include "bench/cold/cold_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/common/flag_set.h"

namespace zygo::bench {

absl::StatusOr<ColdOptions> ParseColdFlags(int argc, char** argv) {
  ColdOptions options;
  FlagSet flags("cold");
  flags.Count("--runs", &options.runs)
      .Count("--warmup", &options.warmup, 0)
      .Text("--zygo", &options.zygo)
      .Text("--bwrap", &options.bwrap)
      .Text("--json", &options.json_path)
      .Switch("--no-peer", &options.no_peer);
  if (absl::Status parsed = flags.Parse(argc, argv, &options.help); !parsed.ok()) return parsed;
  return options;
}

const char* ColdUsage() {
  return R"(Usage: zygo bench cold [flags]

Measures a one-shot sandbox from start to finish: each workload run through
`zygo run host CMD`, through bubblewrap with the same root as zygo's host image
(the peer), and bare with no sandbox (the floor). The variants take turns run by
run, so drift in the machine hits all of them alike. Every run is timed from spawn
to reap with a monotonic clock, with stdin, stdout and stderr on /dev/null.

Workloads: /bin/true (the sandbox alone) and /usr/bin/python3 -c pass.

Flags:
      --runs N       measured runs of each workload and variant (default 200)
      --warmup N     runs first, of each, that are not counted (default 10)
      --zygo PATH    the zygo binary to measure (default: this one)
      --bwrap PATH   bubblewrap (default /usr/bin/bwrap)
      --no-peer      measure zygo and bare only (when bubblewrap is not installed)
      --json FILE    also write the results, with every sample, as JSON
  -h, --help         this text

Percentiles are nearest-rank: each is a time some run actually took.

Exit codes: 0 the bar was met (or not judged, with --no-peer); 1 the bar was not
met; 125 nothing could be measured (a failed run, a missing tool, a bad flag).
A run that fails stops the bench: failures are never averaged in.
)";
}

}  // namespace zygo::bench
