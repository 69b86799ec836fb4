// `zygo bench density`: see density_bench.h and docs/bench-warm.md.
#include "bench/warm/density_bench.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>

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

// N warm functions, each its own handler file, for each N; each called once.
absl::StatusOr<std::vector<PssTotal>> MeasureFunctions(const WarmOptions& options,
                                                       const std::string& binary) {
  ZYGO_ASSIGN_OR_RETURN(SupervisorSession session, StartSession(binary));
  std::vector<PssTotal> totals;
  int registered = 0;
  for (int n : options.counts) {
    for (int i = registered; i < n; ++i) {
      const std::string name = absl::StrCat("fn-", i);
      ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api,
                                            absl::StrCat(session.process->WorkDir(), "/", name),
                                            HandlerSource(i + 1), {name, "handler.py:main"}));
    }
    for (int i = registered; i < n; ++i) {
      const std::string name = absl::StrCat("fn-", i);
      ZYGO_RETURN_IF_ERROR(WaitWarm(*session.api, name, 0, nullptr).status());
      ZYGO_RETURN_IF_ERROR(CallOnce(*session.api, name, "", i));
    }
    registered = n;
    ZYGO_ASSIGN_OR_RETURN(PssTotal total, SettledPss(session.process->pid()));
    totals.push_back(total);
  }
  ZYGO_RETURN_IF_ERROR(session.process->Stop());
  return totals;
}

// One runtime pool holding N distinct scripts, each called once, for each N.
absl::StatusOr<std::vector<PssTotal>> MeasurePool(const WarmOptions& options,
                                                  const std::string& binary) {
  ZYGO_ASSIGN_OR_RETURN(SupervisorSession session, StartSession(binary));
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

// A function (or the pool) is its sandbox's init, the zygote and its spares.
void NoteExtraProcesses(const char* what, const std::vector<int>& counts,
                        const std::vector<PssTotal>& totals, int per_unit, int units_fixed) {
  for (size_t i = 0; i < counts.size(); ++i) {
    const int expected = per_unit * (units_fixed > 0 ? units_fixed : counts[i]);
    if (totals[i].processes != expected) {
      printf(
          "note: %s at N = %d: %d processes where %d (init, zygote, 2 spares each) were "
          "expected; the PSS includes them\n",
          what, counts[i], totals[i].processes, expected);
    }
  }
}

absl::StatusOr<int> Report(const WarmOptions& options, const std::vector<PssTotal>& functions,
                           const std::vector<PssTotal>& pool) {
  const std::vector<int>& counts = options.counts;
  printf("\n%5s %13s %9s %6s %13s %9s %6s\n", "N", "functions MB", "anon MB", "procs", "pool MB",
         "anon MB", "procs");
  for (size_t i = 0; i < counts.size(); ++i) {
    printf("%5d %13.2f %9.2f %6d %13.2f %9.2f %6d\n", counts[i], functions[i].sum.kb / 1024.0,
           functions[i].sum.anon_kb / 1024.0, functions[i].processes, pool[i].sum.kb / 1024.0,
           pool[i].sum.anon_kb / 1024.0, pool[i].processes);
  }
  NoteExtraProcesses("warm functions", counts, functions, 4, 0);
  NoteExtraProcesses("the pool", counts, pool, 4, 1);
  ZYGO_ASSIGN_OR_RETURN(double per_function, Slope(counts, functions, &Pss::kb));
  ZYGO_ASSIGN_OR_RETURN(double per_function_anon, Slope(counts, functions, &Pss::anon_kb));
  ZYGO_ASSIGN_OR_RETURN(double per_script, Slope(counts, pool, &Pss::kb));
  ZYGO_ASSIGN_OR_RETURN(double per_script_anon, Slope(counts, pool, &Pss::anon_kb));
  const std::string over = absl::StrJoin(counts, ",");
  printf(
      "\nper extra warm function: %+.0f kB PSS (%+.0f kB of it anonymous); least-squares "
      "slope over N = %s\n",
      per_function, per_function_anon, over.c_str());
  printf(
      "per extra pooled script: %+.0f kB PSS (%+.0f kB of it anonymous); least-squares "
      "slope over N = %s\n",
      per_script, per_script_anon, over.c_str());
  printf("at N = %d: %d warm functions %.2f MB, one pool with %d scripts %.2f MB (%.1fx)\n",
         counts.back(), counts.back(), functions.back().sum.kb / 1024.0, counts.back(),
         pool.back().sum.kb / 1024.0,
         static_cast<double>(functions.back().sum.kb) / std::max<int64_t>(pool.back().sum.kb, 1));
  const bool pass = per_script <= kPoolSlopeToleranceKb;
  printf(
      "bar: pool slope <= ~0 kB per script (tolerance %.0f kB; see docs/bench-warm.md): %s "
      "(%+.0f kB per script)\n",
      kPoolSlopeToleranceKb, pass ? "PASS" : "FAIL", per_script);
  return pass ? 0 : 1;
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
            "called once; pool: one runtime pool (same imports preloaded) holding N distinct "
            "scripts, each called once; a fresh supervisor for each; spares 2 everywhere\n");
        fflush(stdout);
        absl::StatusOr<std::vector<PssTotal>> functions = MeasureFunctions(options, binary);
        if (!functions.ok()) return FailBench(kBench, functions.status());
        absl::StatusOr<std::vector<PssTotal>> pool = MeasurePool(options, binary);
        if (!pool.ok()) return FailBench(kBench, pool.status());
        absl::StatusOr<int> failed = Report(options, *functions, *pool);
        if (!failed.ok()) return FailBench(kBench, failed.status());
        fflush(stdout);
        return options.strict && *failed > 0 ? 1 : 0;
      });
}

}  // namespace zygo::bench
