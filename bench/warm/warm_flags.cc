// Flag parsing and usage texts for the warm-path benches.
#include "bench/warm/warm_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/common/flag_set.h"

namespace zygo::bench {
namespace {

constexpr char kWarmUsage[] =
    R"(Usage: zygo bench warm [--pool [--scripts N] | --runtime node] [flags]

The warm path: a Python function whose module imports sixteen standard modules, warmed,
then requests on one keep-alive connection to the supervisor's HTTP API: an open-loop
schedule (--requests at --rate per second; a request whose slot passed is sent at once),
then --slow-requests spaced --slow-interval-ms apart. Reports client p50/p99, the
supervisor's per-phase times, the host's bare fork()+wait() floor, how steady the host was
(the lowest and highest median latency over windows of the run), and the same schedules
against the peer: a plain Python server that forks per request (bench/warm/prefork_peer.py).

With --pool: a runtime pool preloading the same modules; --scripts distinct scripts are
stored and each called once, then the schedule sends a different script each request,
against a warm function measured in the same run.

With --runtime node: a Node function (handler.js requiring sixteen builtins, every request
in a fresh worker) on the spaced schedule only, against two Node peers in the same run: a
`node` spawned per request (bench/warm/node_spawn_runner.js) and one long-lived node
running each request with vm.runInNewContext (bench/warm/node_vm_peer.js, n8n's shape).
Reports p50/p99 and CPU per request: zygo's is the supervisor's with all it runs (the
replacement worker's start included), the spawn peer's that of each node it spawned, the
in-process peer's that of its one node.

Flags:
  --requests N          open-loop requests (default 3000; --quick 300)
  --rate R              open-loop requests per second (default 250)
  --slow-requests N     requests of the spaced schedule (default 200; --quick 20)
  --slow-interval-ms MS their spacing (default 100)
  --forks N             bare fork()+wait() rounds for the floor (default 1000)
  --pool                measure a runtime pool instead of the peer
  --scripts N           with --pool: distinct scripts (default 1000; --quick 100)
  --dump FILE           also write every timed request to FILE as CSV: schedule, side,
                        send time, client latency and the supervisor's phases
  --runtime R           python (default) or node
  --node PATH           with --runtime node: the peers' node (default /usr/bin/node)
)";

constexpr char kLoadUsage[] = R"(Usage: zygo bench load [flags]

Sustained requests per second through one warm Python function (the sixteen-module
handler): --connections keep-alive connections, each in a closed loop, for --seconds;
then the prefork peer the same way. Reports rps and latency p50/p99.

Flags:
  --connections N       concurrent connections (default 8)
  --seconds S           how long each side is driven (default 10; --quick 3)
  --spares N            the function's spare processes (default 2, the spec default)
)";

constexpr char kDensityUsage[] = R"(Usage: zygo bench density [flags]

Memory (PSS, from /proc/PID/smaps_rollup) of every process the supervisor runs, for N
warm functions (each its own handler file) against one runtime pool holding N scripts
(each called once), and the least-squares slope of each: what one more costs.

Flags:
  --counts LIST         the checkpoints, ascending (default 1,2,4,8,16; --quick 1,2,4)
)";

constexpr char kEmbedUsage[] = R"(Usage: zygo bench embed [flags]

The embedder's benchmark: one import-heavy script (sixteen imports, prints a line) run as
`zygo exec` of a warm function per call (the real zygo binary each time), `zygo run host
python3` one-shot, and bubblewrap one-shot, interleaved run by run.

Flags:
  --runs N              timed runs of each (default 30; --quick 5)
  --warmup N            untimed runs of each first (default 1)
  --bwrap PATH          bubblewrap (default /usr/bin/bwrap)
)";

constexpr char kCommonUsage[] = R"(
Common flags:
  --quick               a fast smoke run for CI (< 20 s): smaller defaults
  --strict              exit 1 when a bar FAILs (default: print PASS/FAIL, exit 0)
  --supervisor PATH     the supervisor binary (default: found next to zygo)
  --zygote-tree on|off  the function's zygote forked from a runtime zygote, as zygo serve
                        does by default (default on; density measures both)
  --python PATH         the peer's interpreter (default /usr/bin/python3)
  -h, --help            this text
)";

const char* BenchName(WarmBenchKind kind) {
  switch (kind) {
    case WarmBenchKind::kWarm:
      return "warm";
    case WarmBenchKind::kLoad:
      return "load";
    case WarmBenchKind::kDensity:
      return "density";
    case WarmBenchKind::kEmbed:
      return "embed";
  }
  return "warm";
}

absl::StatusOr<std::vector<int>> ParseCounts(const std::string& text) {
  std::vector<int> counts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1 || n > 256 ||
        (!counts.empty() && n <= counts.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--counts '", text, "': expected ascending whole numbers from 1 to 256, e.g. 1,2,4,8"));
    }
    counts.push_back(n);
  }
  if (counts.size() < 2) {
    return absl::InvalidArgumentError("--counts needs at least two checkpoints to fit a slope");
  }
  return counts;
}

// Each bench's own flags, then the ones all four share.
void Declare(WarmBenchKind kind, WarmOptions& o, FlagSet& flags) {
  switch (kind) {
    case WarmBenchKind::kWarm:
      flags.Count("--requests", &o.requests)
          .Number("--rate", &o.rate, 100'000)
          .Count("--slow-requests", &o.slow_requests)
          .Count("--slow-interval-ms", &o.slow_interval_ms)
          .Count("--forks", &o.forks)
          .Count("--scripts", &o.scripts)
          .Text("--dump", &o.dump)
          .Switch("--pool", &o.pool)
          .Custom("--runtime",
                  [&o](const std::string& text) -> absl::Status {
                    if (text != "python" && text != "node") {
                      return absl::InvalidArgumentError(
                          absl::StrCat("--runtime must be python or node, not '", text, "'"));
                    }
                    o.runtime = text;
                    return absl::OkStatus();
                  })
          .Text("--node", &o.node);
      break;
    case WarmBenchKind::kLoad:
      flags.Count("--connections", &o.connections, 1, 64)
          .Number("--seconds", &o.seconds, 100'000)
          .Count("--spares", &o.spares, 1, 64);
      break;
    case WarmBenchKind::kDensity:
      flags.Custom("--counts", [&o](const std::string& text) -> absl::Status {
        absl::StatusOr<std::vector<int>> counts = ParseCounts(text);
        if (!counts.ok()) return counts.status();
        o.counts = *std::move(counts);
        return absl::OkStatus();
      });
      break;
    case WarmBenchKind::kEmbed:
      flags.Count("--runs", &o.runs)
          .Count("--warmup", &o.warmup, 0)
          .Text("--bwrap", &o.bwrap,
                /*allow_empty=*/true);
      break;
  }
  flags.Custom("--zygote-tree", [&o](const std::string& text) -> absl::Status {
    if (text != "on" && text != "off") {
      return absl::InvalidArgumentError(
          absl::StrCat("--zygote-tree must be on or off, not '", text, "'"));
    }
    o.zygote_tree = text == "on";
    return absl::OkStatus();
  });
  flags.Text("--supervisor", &o.supervisor, /*allow_empty=*/true)
      .Text("--python", &o.python, /*allow_empty=*/true)
      .Switch("--quick", &o.quick)
      .Switch("--strict", &o.strict);
}

void ApplyQuickDefaults(const FlagSet& flags, WarmOptions* o) {
  auto unless_given = [&](const char* name, auto* field, auto value) {
    if (!flags.Given(name)) *field = value;
  };
  unless_given("--requests", &o->requests, 300);
  unless_given("--slow-requests", &o->slow_requests, 20);
  unless_given("--scripts", &o->scripts, 100);
  unless_given("--seconds", &o->seconds, 3.0);
  unless_given("--counts", &o->counts, std::vector<int>{1, 2, 4});
  unless_given("--runs", &o->runs, 5);
  unless_given("--forks", &o->forks, 300);
  unless_given("--warmup", &o->warmup, 1);
}

}  // namespace

std::vector<std::string> SupervisorArgs(const WarmOptions& options) {
  return {"--zygote-tree", options.zygote_tree ? "on" : "off"};
}

absl::StatusOr<WarmOptions> ParseWarmFlags(WarmBenchKind kind, int argc, char** argv) {
  WarmOptions options;
  options.kind = kind;
  FlagSet flags(BenchName(kind));
  Declare(kind, options, flags);
  if (absl::Status parsed = flags.Parse(argc, argv, &options.help); !parsed.ok()) return parsed;
  if (flags.Given("--scripts") && !options.pool) {
    return absl::InvalidArgumentError(
        "--scripts is for --pool (zygo bench warm --pool --scripts N)");
  }
  if (options.runtime == "node") {
    for (const char* flag : {"--pool", "--requests", "--rate", "--scripts"}) {
      if (flags.Given(flag)) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag,
                         " is not for --runtime node, which runs the spaced schedule only "
                         "(--slow-requests, --slow-interval-ms)"));
      }
    }
  } else if (flags.Given("--node")) {
    return absl::InvalidArgumentError("--node is for --runtime node");
  }
  if (options.quick) ApplyQuickDefaults(flags, &options);
  return options;
}

const char* WarmUsage(WarmBenchKind kind) {
  static const std::string texts[] = {
      absl::StrCat(kWarmUsage, kCommonUsage), absl::StrCat(kLoadUsage, kCommonUsage),
      absl::StrCat(kDensityUsage, kCommonUsage), absl::StrCat(kEmbedUsage, kCommonUsage)};
  return texts[static_cast<int>(kind)].c_str();
}

}  // namespace zygo::bench
