// The flags of the warm-path benches (`zygo bench warm|load|density|embed`), one parser
// for all four since they share most of them. Pure; no I/O.
#ifndef ZYGO_BENCH_WARM_WARM_FLAGS_H_
#define ZYGO_BENCH_WARM_WARM_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::bench {

enum class WarmBenchKind { kWarm, kLoad, kDensity, kEmbed };

struct WarmOptions {
  WarmBenchKind kind = WarmBenchKind::kWarm;
  bool help = false;
  bool quick = false;      // a fast smoke run (< 20 s) for CI: smaller defaults below
  bool strict = false;     // exit 1 when a bar FAILs (default: report, exit 0)
  std::string supervisor;  // empty: found next to zygo
  std::string python = "/usr/bin/python3";  // the peer's interpreter
  // warm --runtime node: a Node function against two Node peers, on the spaced schedule.
  std::string runtime = "python";
  std::string node = "/usr/bin/node";    // the Node peers' node
  std::string bwrap = "/usr/bin/bwrap";  // embed's one-shot peer
  // zygo serve --zygote-tree: the function's zygote forked from a runtime zygote (density
  // measures both ways whatever this says).
  bool zygote_tree = true;

  // warm: the open-loop schedule, then the slow one; the fork floor.
  int requests = 3000;      // --quick 300
  double rate = 250;        // requests per second
  int slow_requests = 200;  // --quick 20
  int slow_interval_ms = 100;
  int forks = 1000;
  int warmup_requests = 20;  // untimed, on each side, before measuring
  std::string dump;          // a CSV of every timed request, when given
  // warm --pool.
  bool pool = false;
  int scripts = 1000;  // --quick 100

  // load.
  int connections = 8;
  double seconds = 10;  // --quick 3
  int spares = 2;       // spare processes of the function under load

  // density.
  std::vector<int> counts = {1, 2, 4, 8, 16};  // --quick 1,2,4

  // embed.
  int runs = 30;  // --quick 5
  int warmup = 1;
};

// The supervisor's flags `options` asks for.
std::vector<std::string> SupervisorArgs(const WarmOptions& options);

// Parses `argv` (starting after the bench's name). --quick changes only the defaults of
// flags not given explicitly, in any order.
absl::StatusOr<WarmOptions> ParseWarmFlags(WarmBenchKind kind, int argc, char** argv);

// The --help text of each bench.
const char* WarmUsage(WarmBenchKind kind);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_FLAGS_H_
