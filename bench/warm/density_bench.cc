// `zygo bench density`: see density_bench.h and docs/bench-warm.md.
#include "bench/warm/density_bench.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/common/process_tree.h"
#include "bench/warm/warm_report.h"
#include "bench/warm/warm_setup.h"
#include "core/base/status_macros.h"

namespace zygo::bench {
namespace {

constexpr char kBench[] = "density";

// The pool's bar: at most this many kB per extra script. Not 0: PSS is read from live
// processes, and which spare happens to be mid-replacement, or a page the supervisor's
// own bookkeeping dirtied in a sandbox's helper, moves the sum by a few pages between
// checkpoints; that noise is tens of kB, while a script actually kept in memory (a
// module, its code objects) costs far more, and a warm function several MB.
constexpr double kPoolSlopeToleranceKb = 64;

// How long the process tree must stay the same before PSS is read: spares are re-forked
// after each request, asynchronously.
constexpr int kSettleScans = 3;
constexpr int kScanIntervalMs = 100;
constexpr int kSettleDeadlineMs = 10'000;

// The PSS of the supervisor's descendants once their set stopped changing: the median
// of three reads, 100 ms apart.
absl::StatusOr<PssTotal> SettledPss(pid_t supervisor) {
  std::vector<pid_t> last = Descendants(supervisor);
  int same = 0;
  for (int waited = 0; same < kSettleScans && waited < kSettleDeadlineMs;
       waited += kScanIntervalMs) {
    usleep(kScanIntervalMs * 1000);
    std::vector<pid_t> now = Descendants(supervisor);
    same = now == last ? same + 1 : 0;
    last = std::move(now);
  }
  std::vector<PssTotal> reads;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) usleep(kScanIntervalMs * 1000);
    ZYGO_ASSIGN_OR_RETURN(PssTotal total, SumPss(Descendants(supervisor)));
    reads.push_back(total);
  }
  std::sort(reads.begin(), reads.end(),
            [](const PssTotal& a, const PssTotal& b) { return a.sum.kb < b.sum.kb; });
  return reads[1];
}

// One request to `name` (a script of the pool when `digest` is set), checked.
absl::Status CallOnce(sdk::ApiConnection& api, const std::string& name, const std::string& digest,
                      int index) {
  ZYGO_ASSIGN_OR_RETURN(std::string reply, Exec(api, name, digest, index));
  PhaseSamples ignored;
  if (digest.empty()) {
    return CheckExecReplies(
        {reply}, [index](const nlohmann::json& r, int) { return HandlerResultMatches(r, index); },
        &ignored);
  }
  return CheckExecReplies(
      {reply}, [index](const nlohmann::json& r, int) { return PoolResultMatches(r, index); },
      &ignored);
}

// The tree's bars (issue 19): one more function whose handler imports only what the
// runtime zygote holds costs at most this much, and warms in under this.
constexpr double kTreeSlopeBarKb = 2048;
constexpr double kTreeWarmBarMs = 30;

struct FunctionsMeasure {
  std::vector<PssTotal> totals;  // per checkpoint
  std::vector<double> warm_ms;   // each function's warm-up but the first's
};

// The warm-up each function reports (GET /v1/functions warm_ms), but the first one's: with
// the tree it also waited for the runtime zygote.
absl::StatusOr<std::vector<double>> WarmTimes(sdk::ApiConnection& api, int count) {
  ZYGO_ASSIGN_OR_RETURN(nlohmann::json list, api.CallJson("GET", "/v1/functions", ""));
  std::vector<double> times;
  for (const nlohmann::json& info : list.value("functions", nlohmann::json::array())) {
    if (info.value("name", "") != "fn-0") times.push_back(info.value("warm_ms", 0.0));
  }
  if (static_cast<int>(times.size()) != count - 1) {
    return absl::InternalError(
        absl::StrCat("GET /v1/functions listed ", times.size() + 1, " functions, not ", count));
  }
  return times;
}

// N warm functions, each its own handler file, for each N; each called once. `tree`: with
// the zygote tree (zygo serve --zygote-tree on), else each in a sandbox of its own.
absl::StatusOr<FunctionsMeasure> MeasureFunctions(const WarmOptions& options,
                                                  const std::string& binary, bool tree) {
  ZYGO_ASSIGN_OR_RETURN(SupervisorSession session,
                        StartSession(binary, {"--zygote-tree", tree ? "on" : "off"}));
  FunctionsMeasure measure;
  int registered = 0;
  for (int n : options.counts) {
    for (int i = registered; i < n; ++i) {
      const std::string name = absl::StrCat("fn-", i);
      ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api,
                                            absl::StrCat(session.process->WorkDir(), "/", name),
                                            HandlerSource(i + 1), {name, "handler.py:main"}));
      // One at a time, so each warm-up is timed alone and the runtime zygote exists
      // before the second.
      ZYGO_RETURN_IF_ERROR(WaitWarm(*session.api, name, 0, nullptr).status());
      ZYGO_RETURN_IF_ERROR(CallOnce(*session.api, name, "", i));
    }
    registered = n;
    ZYGO_ASSIGN_OR_RETURN(PssTotal total, SettledPss(session.process->pid()));
    measure.totals.push_back(total);
  }
  ZYGO_ASSIGN_OR_RETURN(measure.warm_ms, WarmTimes(*session.api, registered));
  ZYGO_RETURN_IF_ERROR(session.process->Stop());
  return measure;
}

// One runtime pool holding N distinct scripts, each called once, for each N.
absl::StatusOr<std::vector<PssTotal>> MeasurePool(const WarmOptions& options,
                                                  const std::string& binary) {
  ZYGO_ASSIGN_OR_RETURN(SupervisorSession session, StartSession(binary, {"--zygote-tree", "on"}));
  ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api, session.process->WorkDir() + "/pool", "",
                                        {"pool", "", /*pool=*/true, /*preload_sixteen=*/true}));
  ZYGO_RETURN_IF_ERROR(WaitWarm(*session.api, "pool", 0, nullptr).status());
  std::vector<PssTotal> totals;
  int stored = 0;
  for (int n : options.counts) {
    for (int i = stored; i < n; ++i) {
      ZYGO_ASSIGN_OR_RETURN(std::string digest, PutScript(*session.api, PoolScriptSource(i)));
      ZYGO_RETURN_IF_ERROR(CallOnce(*session.api, "pool", digest, i));
    }
    stored = n;
    ZYGO_ASSIGN_OR_RETURN(PssTotal total, SettledPss(session.process->pid()));
    totals.push_back(total);
  }
  ZYGO_RETURN_IF_ERROR(session.process->Stop());
  return totals;
}

// The least-squares slope of `field` of the totals against the counts, in kB per one more.
absl::StatusOr<double> Slope(const std::vector<int>& counts, const std::vector<PssTotal>& totals,
                             int64_t Pss::*field) {
  std::vector<double> x, y;
  for (size_t i = 0; i < counts.size(); ++i) {
    x.push_back(counts[i]);
    y.push_back(static_cast<double>(totals[i].sum.*field));
  }
  ZYGO_ASSIGN_OR_RETURN(LineFit fit, FitLine(x, y));
  return fit.slope;
}

// Processes expected per function (or pool) and in common: a sandbox's init, the zygote and
// its spares each; with the tree, the zygote and its spares each, and the runtime's init and
// zygote once.
void NoteExtraProcesses(const char* what, const std::vector<int>& counts,
                        const std::vector<PssTotal>& totals, int per_unit, int fixed) {
  for (size_t i = 0; i < counts.size(); ++i) {
    const int expected = per_unit * counts[i] + fixed;
    if (totals[i].processes != expected) {
      printf("note: %s at N = %d: %d processes where %d were expected; the PSS includes them\n",
             what, counts[i], totals[i].processes, expected);
    }
  }
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

absl::StatusOr<int> Report(const WarmOptions& options, const FunctionsMeasure& own,
                           const FunctionsMeasure& tree, const std::vector<PssTotal>& pool) {
  const std::vector<int>& counts = options.counts;
  printf("\n%5s %12s %9s %6s %12s %9s %6s %10s %6s\n", "N", "own MB", "anon MB", "procs", "tree MB",
         "anon MB", "procs", "pool MB", "procs");
  for (size_t i = 0; i < counts.size(); ++i) {
    printf("%5d %12.2f %9.2f %6d %12.2f %9.2f %6d %10.2f %6d\n", counts[i],
           own.totals[i].sum.kb / 1024.0, own.totals[i].sum.anon_kb / 1024.0,
           own.totals[i].processes, tree.totals[i].sum.kb / 1024.0,
           tree.totals[i].sum.anon_kb / 1024.0, tree.totals[i].processes, pool[i].sum.kb / 1024.0,
           pool[i].processes);
  }
  NoteExtraProcesses("warm functions, own sandboxes", counts, own.totals, 4, 0);
  NoteExtraProcesses("warm functions, zygote tree", counts, tree.totals, 3, 2);
  // The pool runs as zygo serve runs it by default, forked from a runtime zygote.
  NoteExtraProcesses("the pool", counts, pool, 0, 5);
  const std::string over = absl::StrJoin(counts, ",");
  struct Line {
    const char* what;
    const std::vector<PssTotal>* totals;
  };
  std::map<std::string, double> slopes;
  for (const Line& line :
       {Line{"warm function, own sandbox", &own.totals},
        Line{"warm function, zygote tree", &tree.totals}, Line{"pooled script", &pool}}) {
    ZYGO_ASSIGN_OR_RETURN(double all, Slope(counts, *line.totals, &Pss::kb));
    ZYGO_ASSIGN_OR_RETURN(double anon, Slope(counts, *line.totals, &Pss::anon_kb));
    printf(
        "per extra %s: %+.0f kB PSS (%+.0f kB of it anonymous); least-squares slope over "
        "N = %s\n",
        line.what, all, anon, over.c_str());
    slopes[line.what] = all;
  }
  const double own_slope = slopes["warm function, own sandbox"];
  const double tree_slope = slopes["warm function, zygote tree"];
  const double per_script = slopes["pooled script"];
  printf("the tree's slope / own sandboxes': %.3fx\n", tree_slope / std::max(own_slope, 1.0));
  const double own_warm = Median(own.warm_ms), tree_warm = Median(tree.warm_ms);
  printf(
      "warm-up of functions 2..%d (sandbox start or fork until Hello), p50: own sandbox "
      "%.1f ms, zygote tree %.1f ms (%.2fx)\n",
      counts.back(), own_warm, tree_warm, tree_warm / std::max(own_warm, 0.001));
  const bool pool_pass = per_script <= kPoolSlopeToleranceKb;
  const bool tree_pass = tree_slope <= kTreeSlopeBarKb;
  const bool warm_pass = tree_warm < kTreeWarmBarMs;
  printf(
      "bar: pool slope <= ~0 kB per script (tolerance %.0f kB; see docs/bench-warm.md): %s "
      "(%+.0f kB per script)\n",
      kPoolSlopeToleranceKb, pool_pass ? "PASS" : "FAIL", per_script);
  printf("bar: zygote tree slope <= %.0f kB per function: %s (%+.0f kB)\n", kTreeSlopeBarKb,
         tree_pass ? "PASS" : "FAIL", tree_slope);
  printf("bar: zygote tree warm-up p50 < %.0f ms: %s (%.1f ms)\n", kTreeWarmBarMs,
         warm_pass ? "PASS" : "FAIL", tree_warm);
  return (pool_pass ? 0 : 1) + (tree_pass ? 0 : 1) + (warm_pass ? 0 : 1);
}

}  // namespace

int RunDensityBench(int argc, char** argv) {
  return RunWarmPathBench(
      WarmBenchKind::kDensity, kBench, argc, argv,
      [](const WarmOptions& options, const std::string& binary, const HostInfo&) {
        printf(
            "method: PSS (Pss of /proc/PID/smaps_rollup) summed over every descendant of the "
            "supervisor (its sandboxes' processes: zygotes, spares, sandbox inits), read once "
            "the process tree stopped changing, median of three reads; warm functions: N "
            "functions, each its own handler.py (sixteen imports, a distinct constant), each "
            "warmed alone and called once, each in a sandbox of its own (own) and forked from "
            "one runtime zygote that preloads the sixteen (tree); pool: one runtime pool (same "
            "imports preloaded) holding N distinct scripts, each called once; a fresh supervisor "
            "for each; spares 2 everywhere\n");
        fflush(stdout);
        absl::StatusOr<FunctionsMeasure> own = MeasureFunctions(options, binary, false);
        if (!own.ok()) return FailBench(kBench, own.status());
        absl::StatusOr<FunctionsMeasure> tree = MeasureFunctions(options, binary, true);
        if (!tree.ok()) return FailBench(kBench, tree.status());
        absl::StatusOr<std::vector<PssTotal>> pool = MeasurePool(options, binary);
        if (!pool.ok()) return FailBench(kBench, pool.status());
        absl::StatusOr<int> failed = Report(options, *own, *tree, *pool);
        if (!failed.ok()) return FailBench(kBench, failed.status());
        fflush(stdout);
        return options.strict && *failed > 0 ? 1 : 0;
      });
}

}  // namespace zygo::bench
