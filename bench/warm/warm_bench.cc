// `zygo bench warm`, `zygo bench warm --pool` and `--runtime node` (node_bench.h): see
// warm_bench.h and docs/bench-warm.md.
#include "bench/warm/warm_bench.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/background_process.h"
#include "bench/common/other_work.h"
#include "bench/common/steadiness.h"
#include "bench/common/timed_spawn.h"
#include "bench/warm/node_bench.h"
#include "bench/warm/request_dump.h"
#include "bench/warm/warm_peer.h"
#include "bench/warm/warm_report.h"
#include "bench/warm/warm_setup.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"

namespace zygo::bench {
namespace {

constexpr char kBench[] = "warm";

// One schedule's results for the two sides compared.
struct Compared {
  std::string label;
  double rate = 0;  // requests per second
  OpenLoopResult a, b;
};

// Runs the schedule for side a, then b, then b, then a, half the requests each time (ABBA),
// so a slow drift of the machine lands on both sides alike. Indexes run 0..requests-1 per
// side, in order.
absl::StatusOr<Compared> RunAbba(const std::string& label, int requests, double rate,
                                 const CallFn& a, const CallFn& b) {
  Compared out{label, rate, {}, {}};
  const int half = requests / 2;
  const int rest = requests - half;
  if (half > 0) {
    ZYGO_ASSIGN_OR_RETURN(OpenLoopResult a1, RunOpenLoop(0, half, rate, a));
    AppendOpenLoop(&out.a, std::move(a1));
    ZYGO_ASSIGN_OR_RETURN(OpenLoopResult b1, RunOpenLoop(0, half, rate, b));
    AppendOpenLoop(&out.b, std::move(b1));
  }
  ZYGO_ASSIGN_OR_RETURN(OpenLoopResult b2, RunOpenLoop(half, rest, rate, b));
  AppendOpenLoop(&out.b, std::move(b2));
  ZYGO_ASSIGN_OR_RETURN(OpenLoopResult a2, RunOpenLoop(half, rest, rate, a));
  AppendOpenLoop(&out.a, std::move(a2));
  return out;
}

absl::StatusOr<LatencyRow> Row(const std::string& schedule, const std::string& who,
                               const OpenLoopResult& result) {
  ZYGO_ASSIGN_OR_RETURN(Summary ms, Summarize(result.latency_ms));
  return LatencyRow{schedule, who, ms, result.late};
}

int NumberOfCpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

std::string PythonVersion(const std::string& python) {
  absl::StatusOr<std::string> version = CaptureStdout({{python, "--version"}});
  return version.ok() ? std::string(absl::StripAsciiWhitespace(*version)) : "version unknown";
}

// The host's fork() floor line, or why it is missing.
std::string ForkFloorLine(int forks) {
  absl::StatusOr<std::vector<double>> floor = MeasureForkFloor(forks);
  if (!floor.ok())
    return absl::StrCat("host fork()+wait() floor: not measured (", floor.status().message(), ")");
  absl::StatusOr<Summary> s = Summarize(*floor);
  if (!s.ok()) return "host fork()+wait() floor: not measured";
  return absl::StrFormat(
      "host fork()+wait() floor: p50 %.0f us, p99 %.0f us (%d forks of this bench process, "
      "timed from fork to reap)",
      s->p50, s->p99, forks);
}

// How steady the host was during each schedule, zygo's side (a) and the peer's (b).
std::string SteadinessLines(const std::vector<Compared>& runs) {
  std::string out =
      "steadiness: the median latency of each window of sends, lowest-highest (a wide spread "
      "means the host's own speed moved during the run, and the p99/p50 bars with it)\n";
  for (const Compared& run : runs) {
    const int64_t window_ns = SteadinessWindowNs(run.rate);
    // At least half the requests a full window holds: the halves' edges are part-filled.
    const int min_requests = std::max(1, static_cast<int>(run.rate * window_ns / 2e9));
    absl::StatusOr<Steadiness> a =
        MeasureSteadiness(run.a.latency_ms, run.a.sent_ns, window_ns, min_requests);
    absl::StatusOr<Steadiness> b =
        MeasureSteadiness(run.b.latency_ms, run.b.sent_ns, window_ns, min_requests);
    if (a.ok() && b.ok()) {
      absl::StrAppend(&out, "  ", FormatSteadiness(run.label, window_ns, *a, *b), "\n");
    } else {
      absl::StrAppend(&out, "  ", run.label, ": not measured (",
                      (a.ok() ? b.status() : a.status()).message(), ")\n");
    }
  }
  return out;
}

void PrintPhaseNote() {
  printf(
      "fork and admit happen ahead of demand, on spare processes (the spec's `spares`): they "
      "show how long making a spare took, not time the request waited. run is request sent "
      "to the handler's reply; reply is handing it to the HTTP front end; total is the "
      "supervisor's whole time for the request.\n");
}

// With --dump, writes every timed request of `runs` to the file, times counted from the
// first request sent.
absl::Status MaybeDump(const std::string& path, const std::vector<DumpedRun>& runs) {
  if (path.empty()) return absl::OkStatus();
  int64_t origin = INT64_MAX;
  for (const DumpedRun& run : runs) {
    if (!run.result->sent_ns.empty()) origin = std::min(origin, run.result->sent_ns.front());
  }
  ZYGO_ASSIGN_OR_RETURN(std::string csv, FormatRequestDump(runs, origin));
  ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(path, csv));
  // The origin on CLOCK_MONOTONIC lines the file up with a trace (ftrace's "mono" clock).
  printf("every request: %s (sent_s counts from CLOCK_MONOTONIC %.6f s)\n", path.c_str(),
         origin / 1e9);
  return absl::OkStatus();
}

// Prints the verdict lines; returns how many failed.
int PrintBars(const std::vector<Bar>& bars) {
  int failed = 0;
  for (const Bar& bar : bars) {
    printf("%s\n", BarLine(bar).c_str());
    if (!bar.pass()) ++failed;
  }
  return failed;
}

// Both schedules, zygo against the peer; returns the number of failed bars.
absl::StatusOr<int> MeasureAgainstPeer(const WarmOptions& options, SupervisorSession& session) {
  const std::string handler_file = session.process->WorkDir() + "/warm/handler.py";
  ZYGO_ASSIGN_OR_RETURN(std::unique_ptr<PeerServer> peer,
                        PeerServer::Start(PreforkPeerScript(options.python),
                                          session.process->WorkDir(), handler_file, "main"));
  ZYGO_ASSIGN_OR_RETURN(PeerConnection peer_connection,
                        PeerConnection::Connect(peer->socket_path()));
  CallFn peer_call = [&peer_connection](int index) {
    return peer_connection.Call(EventJson(index));
  };
  for (int i = 0; i < options.warmup_requests; ++i) ZYGO_RETURN_IF_ERROR(peer_call(i).status());
  printf(
      "peer: %s running bench/warm/prefork_peer.py: unsandboxed, the same handler file and "
      "imports, os.fork() per request, the reply through a pipe; a line of JSON per request "
      "on one connection, same schedules; %d untimed requests first\n",
      PythonVersion(options.python).c_str(), options.warmup_requests);
  fflush(stdout);

  const pid_t supervisor_pid = session.process->pid();
  OtherWork other([&] { return HelpersCpu(supervisor_pid, peer->pid()); });
  CallFn zygo_call = ExecCall(session.api.get(), "warm");
  const std::string fast = absl::StrFormat("%g/s open loop", options.rate);
  const std::string slow = absl::StrFormat("%d ms apart", options.slow_interval_ms);
  std::vector<Compared> runs;
  ZYGO_ASSIGN_OR_RETURN(Compared f,
                        RunAbba(fast, options.requests, options.rate, zygo_call, peer_call));
  runs.push_back(std::move(f));
  ZYGO_ASSIGN_OR_RETURN(
      Compared s, RunAbba(slow, options.slow_requests, 1000.0 / options.slow_interval_ms, zygo_call,
                          peer_call));
  runs.push_back(std::move(s));
  ZYGO_RETURN_IF_ERROR(peer->Stop());
  const std::string other_line = other.Line(NumberOfCpus());

  std::vector<LatencyRow> rows;
  std::vector<PhaseRow> phase_rows;
  std::vector<Bar> bars;
  std::vector<PhaseSamples> phases_of_runs(runs.size());
  std::vector<DumpedRun> dumped;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Compared& run = runs[i];
    PhaseSamples& phases = phases_of_runs[i];
    ZYGO_RETURN_IF_ERROR(CheckExecReplies(run.a.replies, &HandlerResultMatches, &phases));
    dumped.push_back({run.label, "zygo", &run.a, &phases});
    dumped.push_back({run.label, "peer", &run.b, nullptr});
    ZYGO_RETURN_IF_ERROR(CheckPeerReplies(run.b.replies, &HandlerResultMatches));
    ZYGO_ASSIGN_OR_RETURN(LatencyRow zygo_row, Row(run.label, "zygo", run.a));
    ZYGO_ASSIGN_OR_RETURN(LatencyRow peer_row, Row(run.label, "peer", run.b));
    ZYGO_ASSIGN_OR_RETURN(PhaseRow phase_row, SummarizePhases(run.label, phases));
    bars.push_back({absl::StrCat("warm p50 <= 0.6x peer p50 (", run.label, ")"),
                    zygo_row.ms.p50 / peer_row.ms.p50, 0.6});
    bars.push_back({absl::StrCat("warm p99 <= 2x warm p50 (", run.label, ")"),
                    zygo_row.ms.p99 / zygo_row.ms.p50, 2.0});
    rows.push_back(zygo_row);
    rows.push_back(peer_row);
    phase_rows.push_back(phase_row);
  }
  printf("\n%s\n%s", FormatLatencyTable(rows).c_str(), FormatPhaseTable(phase_rows).c_str());
  PrintPhaseNote();
  printf("%s\n%s\n", other_line.c_str(), ForkFloorLine(options.forks).c_str());
  printf("%s", SteadinessLines(runs).c_str());
  ZYGO_RETURN_IF_ERROR(MaybeDump(options.dump, dumped));
  printf("\n");
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    printf("zygo / peer (%s): p50 %.2fx, p99 %.2fx\n", rows[i].schedule.c_str(),
           rows[i].ms.p50 / rows[i + 1].ms.p50, rows[i].ms.p99 / rows[i + 1].ms.p99);
  }
  return PrintBars(bars);
}

// Stores the scripts and calls each once, checking its reply; returns their digests.
absl::StatusOr<std::vector<std::string>> PrepareScripts(sdk::ApiConnection& api, int scripts) {
  std::vector<std::string> digests;
  for (int i = 0; i < scripts; ++i) {
    ZYGO_ASSIGN_OR_RETURN(std::string digest, PutScript(api, PoolScriptSource(i)));
    digests.push_back(digest);
  }
  std::vector<std::string> replies;
  for (int i = 0; i < scripts; ++i) {
    ZYGO_ASSIGN_OR_RETURN(std::string reply, Exec(api, "pool", digests[i], i));
    replies.push_back(std::move(reply));
  }
  PhaseSamples ignored;
  ZYGO_RETURN_IF_ERROR(CheckExecReplies(
      replies, [](const nlohmann::json& r, int k) { return PoolResultMatches(r, k); }, &ignored));
  return digests;
}

// The pool against a warm function in the same supervisor; returns the failed bars.
absl::StatusOr<int> MeasurePool(const WarmOptions& options, SupervisorSession& session) {
  const std::string work = session.process->WorkDir();
  ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api, work + "/pool", "",
                                        {"pool", "", /*pool=*/true, /*preload_sixteen=*/true}));
  ZYGO_ASSIGN_OR_RETURN(sdk::ApiConnection pool_api,
                        sdk::ApiConnection::Connect(session.process->http_socket()));
  ZYGO_ASSIGN_OR_RETURN(double pool_warm_ms, WaitWarm(pool_api, "pool", 0, nullptr));
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> digests,
                        PrepareScripts(pool_api, options.scripts));
  printf(
      "pool: runtime pool preloading the sixteen modules, warm in %.0f ms; %d distinct scripts "
      "stored (PUT /v1/scripts) and each called once before measuring; request i runs script "
      "i mod %d; pool and warm function take turns (A B B A halves)\n",
      pool_warm_ms, options.scripts, options.scripts);
  fflush(stdout);
  CallFn pool_call = [&pool_api, &digests](int index) {
    return Exec(pool_api, "pool", digests[index % digests.size()], index);
  };
  const std::string fast = absl::StrFormat("%g/s open loop", options.rate);
  const pid_t supervisor_pid = session.process->pid();
  OtherWork other([supervisor_pid] { return HelpersCpu(supervisor_pid, 0); });
  ZYGO_ASSIGN_OR_RETURN(Compared run, RunAbba(fast, options.requests, options.rate,
                                              ExecCall(session.api.get(), "warm"), pool_call));
  const std::string other_line = other.Line(NumberOfCpus());
  PhaseSamples warm_phases, pool_phases;
  ZYGO_RETURN_IF_ERROR(CheckExecReplies(run.a.replies, &HandlerResultMatches, &warm_phases));
  const int n = options.scripts;
  ZYGO_RETURN_IF_ERROR(CheckExecReplies(
      run.b.replies, [n](const nlohmann::json& r, int k) { return PoolResultMatches(r, k % n); },
      &pool_phases));
  ZYGO_ASSIGN_OR_RETURN(LatencyRow warm_row, Row(fast, "warm", run.a));
  ZYGO_ASSIGN_OR_RETURN(LatencyRow pool_row, Row(fast, "pool", run.b));
  ZYGO_ASSIGN_OR_RETURN(PhaseRow warm_phase, SummarizePhases(fast + " warm", warm_phases));
  ZYGO_ASSIGN_OR_RETURN(PhaseRow pool_phase, SummarizePhases(fast + " pool", pool_phases));
  printf("\n%s\n%s", FormatLatencyTable({warm_row, pool_row}).c_str(),
         FormatPhaseTable({warm_phase, pool_phase}).c_str());
  PrintPhaseNote();
  printf("%s\n%s\n", other_line.c_str(), ForkFloorLine(options.forks).c_str());
  ZYGO_RETURN_IF_ERROR(MaybeDump(
      options.dump, {{fast, "warm", &run.a, &warm_phases}, {fast, "pool", &run.b, &pool_phases}}));
  printf("\n");
  printf("pool / warm function: p50 %.2fx (%+.3f ms), p99 %.2fx (%+.3f ms)\n",
         pool_row.ms.p50 / warm_row.ms.p50, pool_row.ms.p50 - warm_row.ms.p50,
         pool_row.ms.p99 / warm_row.ms.p99, pool_row.ms.p99 - warm_row.ms.p99);
  return PrintBars({{"pool p50 <= 1.35x warm p50", pool_row.ms.p50 / warm_row.ms.p50, 1.35}});
}

}  // namespace

int RunWarmBench(int argc, char** argv) {
  return RunWarmPathBench(
      WarmBenchKind::kWarm, kBench, argc, argv,
      [](const WarmOptions& options, const std::string& binary, const HostInfo&) {
        absl::StatusOr<SupervisorSession> session = StartSession(binary, SupervisorArgs(options));
        if (!session.ok()) return FailBench(kBench, session.status());
        if (options.runtime == "node") {
          return FinishBench(kBench, MeasureNodeAgainstPeers(options, *session), *session,
                             options.strict);
        }
        absl::StatusOr<double> warm_ms =
            WarmTheWarmFunction(*session, FunctionSpecOptions{}.spares, options.warmup_requests);
        if (!warm_ms.ok()) return FailBench(kBench, warm_ms.status());
        printf(
            "method: function 'warm' (python, handler.py importing sixteen modules, spares 2) "
            "warm %.0f ms after registering; %d untimed requests first; one keep-alive "
            "HTTP/1.1 connection; open loop: request k due at k/rate, sent at once when the "
            "reply before it came late (counted in 'late'); latency from send to whole reply, "
            "client clock; nearest-rank percentiles\n",
            *warm_ms, options.warmup_requests);
        absl::StatusOr<int> failed =
            options.pool ? MeasurePool(options, *session) : MeasureAgainstPeer(options, *session);
        return FinishBench(kBench, failed, *session, options.strict);
      });
}

}  // namespace zygo::bench
