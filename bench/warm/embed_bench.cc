// `zygo bench embed`: see embed_bench.h and docs/bench-warm.md.
#include "bench/warm/embed_bench.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/background_process.h"
#include "bench/common/interleaved.h"
#include "bench/common/measured_zygo.h"
#include "bench/warm/warm_report.h"
#include "bench/warm/warm_setup.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"

namespace zygo::bench {
namespace {

constexpr char kBench[] = "embed";
constexpr char kWorkload[] = "sixteen imports";
constexpr double kBarMinRatio = 40;
constexpr char kPython[] = "/usr/bin/python3";

TimedStep Step(const char* name, std::vector<std::string> argv) {
  Command command{std::move(argv)};
  return {name, command, CommandLine(command)};
}

// The three runners. zygo exec's function has the script's directory as its code
// directory (/code), zygo run binds it read-only at /code, and bwrap binds it read-only
// at its own path again over its fresh /tmp (which would hide it; bwrap cannot make a
// /code mountpoint in the read-only root).
std::vector<InterleavedCase> EmbedCases(const std::string& zygo, const std::string& socket,
                                        const std::string& bwrap, const std::string& dir) {
  return {
      {kWorkload,
       "zygo exec",
       {Step("zygo exec", {zygo, "exec", "--socket", socket, "embed"})},
       {},
       {}},
      {kWorkload,
       "zygo run",
       {Step("zygo run",
             {zygo, "run", "-v", dir + ":/code:ro", "host", kPython, "/code/script.py"})},
       {},
       {}},
      {kWorkload,
       "bwrap",
       {Step("bwrap", {bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs",
                       "/tmp", "--ro-bind", dir, dir, "--unshare-all", "--die-with-parent", kPython,
                       dir + "/script.py"})},
       {},
       {}},
  };
}

// Every runner must print the script's line once before anything is timed: a runner that
// fails fast would otherwise look fast.
absl::Status CheckRunnersWork(const std::vector<InterleavedCase>& cases) {
  for (const InterleavedCase& c : cases) {
    absl::StatusOr<std::string> out = CaptureStdout(c.steps.front().command);
    if (!out.ok()) {
      return absl::Status(
          out.status().code(),
          absl::StrCat(c.variant, " does not run the script: ", out.status().message()));
    }
    if (!absl::StrContains(*out, kEmbedLine)) {
      return absl::InternalError(absl::StrCat(c.variant, " ran but did not print '", kEmbedLine,
                                              "': ", out->substr(0, 500),
                                              "\n  command: ", c.steps.front().shown));
    }
  }
  return absl::OkStatus();
}

int Report(const std::vector<MeasuredCase>& measured, const std::vector<InterleavedCase>& cases) {
  const Summary& exec = measured[0].result.summary;
  printf("\n%-10s %5s %9s %9s %9s %9s %12s\n", "runner", "runs", "p50 ms", "p90 ms", "p99 ms",
         "mean ms", "p50/zygo exec");
  for (const MeasuredCase& m : measured) {
    const Summary& s = m.result.summary;
    printf("%-10s %5d %9.2f %9.2f %9.2f %9.2f %11.1fx\n", m.result.variant.c_str(), s.count, s.p50,
           s.p90, s.p99, s.mean, s.p50 / exec.p50);
  }
  printf("commands:\n");
  for (const InterleavedCase& c : cases)
    printf("  %-10s %s\n", c.variant.c_str(), c.steps[0].shown.c_str());
  printf(
      "zygo exec starts the (static) zygo program per call, which talks to the supervisor; "
      "an embedder calling the API directly pays what `zygo bench warm` measures instead\n\n");
  const Summary& run = measured[1].result.summary;
  const Summary& bwrap = measured[2].result.summary;
  printf("zygo run / zygo exec: p50 %.1fx; bwrap / zygo exec: p50 %.1fx, p99 %.1fx\n",
         run.p50 / exec.p50, bwrap.p50 / exec.p50, bwrap.p99 / exec.p99);
  MinBar bar{absl::StrFormat("bwrap / zygo exec p50 >= %.0fx", kBarMinRatio), bwrap.p50 / exec.p50,
             kBarMinRatio};
  printf("%s\n", BarLine(bar).c_str());
  return bar.pass() ? 0 : 1;
}

absl::StatusOr<int> Measure(const WarmOptions& options, SupervisorSession& session) {
  const std::string dir = session.process->WorkDir() + "/embed";
  // The entry file must exist when the function is registered.
  if (mkdir(dir.c_str(), 0755) != 0)
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", dir, ")"));
  ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(dir + "/script.py", EmbedScriptSource()));
  ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api, dir, "", {"embed", "script.py:main"}));
  ZYGO_ASSIGN_OR_RETURN(std::string zygo, MeasuredZygo(""));
  ZYGO_ASSIGN_OR_RETURN(double warm_ms, WaitWarm(*session.api, "embed", 0, nullptr));
  std::vector<InterleavedCase> cases =
      EmbedCases(zygo, session.process->http_socket(), options.bwrap, dir);
  ZYGO_RETURN_IF_ERROR(CheckRunnersWork(cases));
  printf(
      "method: script.py (sixteen imports, prints a line) per call; function 'embed' warm in "
      "%.0f ms; %d runs after %d warm-up of each runner, taking turns run by run; spawn to "
      "reap, CLOCK_MONOTONIC; nearest-rank percentiles\n",
      warm_ms, options.runs, options.warmup);
  fflush(stdout);
  InterleavedOptions run_options;
  run_options.runs = options.runs;
  run_options.warmup = options.warmup;
  ZYGO_ASSIGN_OR_RETURN(std::vector<MeasuredCase> measured, MeasureInterleaved(cases, run_options));
  return Report(measured, cases);
}

}  // namespace

int RunEmbedBench(int argc, char** argv) {
  return RunWarmPathBench(
      WarmBenchKind::kEmbed, kBench, argc, argv,
      [](const WarmOptions& options, const std::string& binary, const HostInfo& host) {
        if (!host.bwrap_found) {
          return FailBench(kBench, absl::NotFoundError(absl::StrCat(
                                       "no peer: bubblewrap not found at ", options.bwrap,
                                       "; install it or pass --bwrap PATH")));
        }
        absl::StatusOr<SupervisorSession> session = StartSession(binary, SupervisorArgs(options));
        if (!session.ok()) return FailBench(kBench, session.status());
        absl::StatusOr<int> failed = Measure(options, *session);
        return FinishBench(kBench, failed, *session, options.strict);
      });
}

}  // namespace zygo::bench
