// Flag parsing and usage texts for the warm-path benches.
#include "bench/warm/warm_flags.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/common/flag_values.h"

namespace zygo::bench {
namespace {

constexpr char kWarmUsage[] = R"(Usage: zygo bench warm [--pool [--scripts N]] [flags]

The warm path: a Python function whose module imports sixteen standard modules, warmed,
then requests on one keep-alive connection to the supervisor's HTTP API: an open-loop
schedule (--requests at --rate per second; a request whose slot passed is sent at once),
then --slow-requests spaced --slow-interval-ms apart. Reports client p50/p99, the
supervisor's per-phase times, the host's bare fork()+wait() floor, how steady the host was
(the lowest and highest median latency over windows of the run), and the same schedules
against the peer: a plain Python server that forks per request (bench/prefork_peer.py).

With --pool: a runtime pool preloading the same modules; --scripts distinct scripts are
stored and each called once, then the schedule sends a different script each request,
against a warm function measured in the same run.

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

// The value-taking flags each bench accepts.
const std::set<std::string>& ValueFlags(WarmBenchKind kind) {
  static const std::set<std::string> warm = {
      "--requests", "--rate",       "--slow-requests", "--slow-interval-ms", "--forks", "--scripts",
      "--dump",     "--supervisor", "--python"};
  static const std::set<std::string> load = {"--connections", "--seconds", "--spares",
                                             "--supervisor", "--python"};
  static const std::set<std::string> density = {"--counts", "--supervisor", "--python"};
  static const std::set<std::string> embed = {"--runs", "--warmup", "--bwrap", "--supervisor",
                                              "--python"};
  switch (kind) {
    case WarmBenchKind::kWarm:
      return warm;
    case WarmBenchKind::kLoad:
      return load;
    case WarmBenchKind::kDensity:
      return density;
    case WarmBenchKind::kEmbed:
      return embed;
  }
  return warm;
}

// TakeFlagValue wants a plain function pointer: one per bench.
template <WarmBenchKind kKind>
bool TakesValue(const std::string& name) {
  return ValueFlags(kKind).count(name) > 0;
}

using TakesValueFn = bool (*)(const std::string&);

TakesValueFn TakesValueFor(WarmBenchKind kind) {
  switch (kind) {
    case WarmBenchKind::kWarm:
      return &TakesValue<WarmBenchKind::kWarm>;
    case WarmBenchKind::kLoad:
      return &TakesValue<WarmBenchKind::kLoad>;
    case WarmBenchKind::kDensity:
      return &TakesValue<WarmBenchKind::kDensity>;
    case WarmBenchKind::kEmbed:
      return &TakesValue<WarmBenchKind::kEmbed>;
  }
  return &TakesValue<WarmBenchKind::kWarm>;
}

absl::StatusOr<double> ParsePositive(const std::string& flag, const std::string& text, double max) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !(value > 0) || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "': expected a number above 0, at most ", max));
  }
  return value;
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

// Applies one value flag; `given` records it so --quick leaves it alone.
absl::Status Apply(const FlagValue& flag, WarmOptions* o, std::set<std::string>* given) {
  given->insert(flag.name);
  const std::string& v = flag.value;
  absl::StatusOr<int> count = absl::InvalidArgumentError("");
  absl::StatusOr<double> number = absl::InvalidArgumentError("");
  if (flag.name == "--supervisor") {
    o->supervisor = v;
  } else if (flag.name == "--python") {
    o->python = v;
  } else if (flag.name == "--bwrap") {
    o->bwrap = v;
  } else if (flag.name == "--dump") {
    if (v.empty()) return absl::InvalidArgumentError("--dump needs a file name");
    o->dump = v;
  } else if (flag.name == "--counts") {
    absl::StatusOr<std::vector<int>> counts = ParseCounts(v);
    if (!counts.ok()) return counts.status();
    o->counts = *counts;
  } else if (flag.name == "--rate" || flag.name == "--seconds") {
    if (!(number = ParsePositive(flag.name, v, 100'000)).ok()) return number.status();
    (flag.name == "--rate" ? o->rate : o->seconds) = *number;
  } else {
    const int min = flag.name == "--warmup" ? 0 : 1;
    if (!(count = ParseRunCount(flag.name, v, min)).ok()) return count.status();
    if (flag.name == "--requests") o->requests = *count;
    if (flag.name == "--slow-requests") o->slow_requests = *count;
    if (flag.name == "--slow-interval-ms") o->slow_interval_ms = *count;
    if (flag.name == "--forks") o->forks = *count;
    if (flag.name == "--scripts") o->scripts = *count;
    if (flag.name == "--connections") o->connections = *count;
    if (flag.name == "--spares") o->spares = *count;
    if (flag.name == "--runs") o->runs = *count;
    if (flag.name == "--warmup") o->warmup = *count;
    if ((flag.name == "--connections" || flag.name == "--spares") && *count > 64) {
      return absl::InvalidArgumentError(absl::StrCat(flag.name, " '", v, "': at most 64"));
    }
  }
  return absl::OkStatus();
}

void ApplyQuickDefaults(const std::set<std::string>& given, WarmOptions* o) {
  auto unless_given = [&](const char* name, auto* field, auto value) {
    if (given.count(name) == 0) *field = value;
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

absl::StatusOr<WarmOptions> ParseWarmFlags(WarmBenchKind kind, int argc, char** argv) {
  WarmOptions options;
  options.kind = kind;
  std::set<std::string> given;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--strict") {
      options.strict = true;
    } else if (arg == "--pool" && kind == WarmBenchKind::kWarm) {
      options.pool = true;
    } else {
      absl::StatusOr<FlagValue> flag =
          TakeFlagValue(argc, argv, &i, TakesValueFor(kind), BenchName(kind));
      if (!flag.ok()) return flag.status();
      if (absl::Status applied = Apply(*flag, &options, &given); !applied.ok()) return applied;
    }
  }
  if (given.count("--scripts") > 0 && !options.pool) {
    return absl::InvalidArgumentError(
        "--scripts is for --pool (zygo bench warm --pool --scripts N)");
  }
  if (options.quick) ApplyQuickDefaults(given, &options);
  return options;
}

const char* WarmUsage(WarmBenchKind kind) {
  static const std::string texts[] = {
      absl::StrCat(kWarmUsage, kCommonUsage), absl::StrCat(kLoadUsage, kCommonUsage),
      absl::StrCat(kDensityUsage, kCommonUsage), absl::StrCat(kEmbedUsage, kCommonUsage)};
  return texts[static_cast<int>(kind)].c_str();
}

}  // namespace zygo::bench
