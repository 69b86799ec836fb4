#include "bench/cold/cold_bench.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/cold/cold_flags.h"
#include "bench/cold/cold_report.h"
#include "bench/cold/cold_variants.h"
#include "bench/common/host_info.h"
#include "bench/common/measured_zygo.h"
#include "bench/common/stats.h"
#include "bench/common/timed_spawn.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/wait_status.h"

namespace zygo::bench {
namespace {

// No single run of these workloads takes more than a fraction of a second; one that
// hangs for a minute is broken, and the bench says so instead of waiting forever.
constexpr int kRunDeadlineMs = 60'000;

// Above this many CPUs of other work on average, other work competed with the runs
// enough to move the numbers. It is not near zero even on an idle host: the kernel
// tears the sandboxes' namespaces down (notably the network namespace) in its own
// worker threads after each run has been reaped, and that time is charged to no
// process of the bench: about 0.35 CPUs on a 2-vCPU VM against 0.01 idle.
constexpr double kBusyOtherCpus = 0.5;

#ifdef __OPTIMIZE__
constexpr bool kOptimizedBuild = true;
#else
constexpr bool kOptimizedBuild = false;
#endif

// How much the host was disturbed while the bench ran.
struct Disturbance {
  double seconds = 0;                // the measuring loop's wall time
  std::optional<double> other_cpus;  // CPUs other work used on average meanwhile
};

int Fail(const absl::Status& status) {
  fflush(stdout);  // what was printed so far comes first when both go to one place
  fprintf(stderr, "zygo bench cold: %s\n", std::string(status.message()).c_str());
  return 125;
}

absl::Status CheckWorkloadsExist() {
  for (const Workload& workload : ColdWorkloads()) {
    if (access(workload.argv[0].c_str(), X_OK) != 0) {
      return base::ErrnoStatus(errno,
                               absl::StrCat("workload '", workload.name, "' cannot run: access(",
                                            workload.argv[0], ", X_OK)"));
    }
  }
  return absl::OkStatus();
}

// One run of one case; a run that does not exit 0 ends the bench, since an average
// that includes failures measures nothing.
absl::StatusOr<double> RunOnce(const ColdCase& c, int round, int warmup) {
  std::string which = round < warmup ? absl::StrCat("warm-up run ", round + 1)
                                     : absl::StrCat("run ", round - warmup + 1);
  std::string label = absl::StrCat(which, " of '", c.workload, "' through ", c.variant);
  absl::StatusOr<TimedRun> run = RunTimed(c.command, kRunDeadlineMs);
  if (!run.ok()) {
    return absl::Status(run.status().code(), absl::StrCat(label, ": ", run.status().message(),
                                                          "\n  command: ", CommandLine(c.command)));
  }
  if (!WIFEXITED(run->wait_status) || WEXITSTATUS(run->wait_status) != 0) {
    return absl::AbortedError(
        absl::StrCat(label, " ", base::sys::DescribeWaitStatus(run->wait_status),
                     "; a failing run is never averaged in, so the bench stops here.\n"
                     "  Repeat it by hand to see its error: ",
                     CommandLine(c.command)));
  }
  return run->ms;
}

// Runs every case warmup + runs times. Each round runs all cases, starting one case
// later than the round before, so each case takes every position in the order
// equally often and slow drift of the machine lands on all of them alike.
absl::StatusOr<std::vector<CaseResult>> Measure(const std::vector<ColdCase>& cases,
                                                const ColdOptions& options) {
  std::vector<CaseResult> results;
  for (const ColdCase& c : cases) results.push_back({c.workload, c.variant, {}, {}});
  const int n = static_cast<int>(cases.size());
  for (int round = 0; round < options.warmup + options.runs; ++round) {
    for (int k = 0; k < n; ++k) {
      const int index = (round + k) % n;
      ZYGO_ASSIGN_OR_RETURN(double ms, RunOnce(cases[index], round, options.warmup));
      if (round >= options.warmup) results[index].samples_ms.push_back(ms);
    }
  }
  for (CaseResult& result : results) {
    ZYGO_ASSIGN_OR_RETURN(result.summary, Summarize(result.samples_ms));
  }
  return results;
}

// Measure(), noting how long it took and how much CPU other work on the host used
// meanwhile: the host's busy time less the bench's own and its children's.
absl::StatusOr<std::vector<CaseResult>> MeasureObserved(const std::vector<ColdCase>& cases,
                                                        const ColdOptions& options,
                                                        Disturbance* disturbance) {
  std::optional<double> busy_before = HostBusyCpuSeconds();
  double own_before = OwnCpuSeconds();
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<CaseResult>> results = Measure(cases, options);
  disturbance->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<double> busy_after = HostBusyCpuSeconds();
  double own = OwnCpuSeconds() - own_before;
  if (busy_before && busy_after && disturbance->seconds > 0) {
    double others = std::max(0.0, *busy_after - *busy_before - own);
    disturbance->other_cpus = others / disturbance->seconds;
  }
  return results;
}

std::string ZygoVersion(const std::string& zygo) {
  absl::StatusOr<std::string> version = CaptureStdout({{zygo, "--version"}});
  if (!version.ok()) return "version unknown";
  return std::string(absl::StripAsciiWhitespace(*version));
}

// What is known of how the measured zygo was compiled: only when it is this binary.
std::string BuildMode(const std::string& zygo) {
  if (!IsForwardingZygo(zygo)) return "";
  return kOptimizedBuild ? ", optimised build"
                         : ", UNOPTIMISED build: use `bazel build -c opt //cli:zygo` for "
                           "numbers to publish";
}

void PrintPreamble(const ColdOptions& options, const std::string& zygo, size_t case_count) {
  printf("zygo: %s (%s%s)\n", zygo.c_str(), ZygoVersion(zygo).c_str(), BuildMode(zygo).c_str());
  printf(
      "method: %d runs after %d warm-up of each case, %zu cases taking turns; "
      "spawn to reap, CLOCK_MONOTONIC; nearest-rank percentiles; image 'host' "
      "(nothing to pull or flatten, so no first-time cost is included)\n",
      options.runs, options.warmup, case_count);
  fflush(stdout);
}

void PrintDisturbance(const Disturbance& d, int nproc) {
  if (!d.other_cpus) {
    printf("other work: unknown (no /proc/stat), over %.1f s of runs\n", d.seconds);
    return;
  }
  printf(
      "other work: %.2f of %d CPUs on average during the %.1f s of runs (host busy "
      "time less the bench's own processes; includes kernel workers tearing down the "
      "sandboxes' namespaces)\n",
      *d.other_cpus, nproc, d.seconds);
  if (*d.other_cpus > kBusyOtherCpus) {
    printf(
        "note: the host was busy while the bench ran; these numbers say as much about "
        "the machine as about zygo\n");
  }
}

void PrintCommands(const std::vector<ColdCase>& cases) {
  printf("commands (the first workload; the others differ only in CMD):\n");
  for (const ColdCase& c : cases) {
    if (c.workload != cases.front().workload) break;
    printf("  %-5s %s\n", c.variant.c_str(), CommandLine(c.command).c_str());
  }
}

absl::Status WriteJson(const std::string& path, const HostInfo& host, const ColdOptions& options,
                       const std::string& zygo, const Disturbance& disturbance,
                       const std::vector<CaseResult>& results, const BarResult& bar) {
  nlohmann::ordered_json json = {{"bench", "cold"},
                                 {"host", HostToJson(host)},
                                 {"zygo", zygo},
                                 {"zygo_build", BuildMode(zygo)},
                                 {"runs", options.runs},
                                 {"warmup", options.warmup},
                                 {"percentiles", "nearest-rank"},
                                 {"seconds", disturbance.seconds}};
  json["other_work_cpus"] = disturbance.other_cpus ? nlohmann::ordered_json(*disturbance.other_cpus)
                                                   : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json body = ResultsToJson(results, bar);
  json["cases"] = body["cases"];
  json["bar"] = body["bar"];
  std::ofstream file(path);
  file << json.dump(2) << "\n";
  file.close();
  if (!file) return absl::UnavailableError(absl::StrCat("could not write --json ", path));
  return absl::OkStatus();
}

}  // namespace

int RunColdBench(int argc, char** argv) {
  absl::StatusOr<ColdOptions> parsed = ParseColdFlags(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  const ColdOptions& options = *parsed;
  if (options.help) {
    fputs(ColdUsage(), stdout);
    return 0;
  }
  absl::StatusOr<std::string> zygo = MeasuredZygo(options.zygo);
  if (!zygo.ok()) return Fail(zygo.status());

  HostInfo host = ProbeHost(options.bwrap);
  printf("%s\n", HostLine(host).c_str());
  const bool with_peer = !options.no_peer;
  if (with_peer && !host.bwrap_found) {
    printf(
        "peer: bubblewrap not found at %s, so the peer could not be measured and there "
        "is no verdict.\n",
        options.bwrap.c_str());
    return Fail(absl::NotFoundError(
        "no peer: install bubblewrap, pass --bwrap PATH, or --no-peer to measure zygo and "
        "bare only"));
  }
  if (HostWasBusy(host)) {
    printf(
        "note: the host was busy before the bench (load %.2f on %d CPUs); these numbers "
        "say as much about the machine as about zygo\n",
        host.load[0], host.nproc);
  }
  if (absl::Status ok = CheckWorkloadsExist(); !ok.ok()) return Fail(ok);
  absl::StatusOr<std::vector<ColdCase>> cases = BuildColdCases(*zygo, options.bwrap, with_peer);
  if (!cases.ok()) return Fail(cases.status());
  PrintPreamble(options, *zygo, cases->size());

  Disturbance disturbance;
  absl::StatusOr<std::vector<CaseResult>> results = MeasureObserved(*cases, options, &disturbance);
  if (!results.ok()) return Fail(results.status());
  printf("\n%s\n%s\n", FormatTable(*results).c_str(), FormatOverheads(*results).c_str());
  PrintDisturbance(disturbance, host.nproc);
  PrintCommands(*cases);
  BarResult bar = JudgeBar(*results, "--no-peer: bubblewrap was not measured");
  printf("\n%s\n", bar.line.c_str());
  fflush(stdout);
  if (!options.json_path.empty()) {
    absl::Status written =
        WriteJson(options.json_path, host, options, *zygo, disturbance, *results, bar);
    if (!written.ok()) return Fail(written);
  }
  return bar.verdict == BarVerdict::kNotMet ? 1 : 0;
}

}  // namespace zygo::bench
