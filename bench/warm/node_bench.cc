// `zygo bench warm --runtime node`: see node_bench.h and docs/bench-warm.md.
#include "bench/warm/node_bench.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/other_work.h"
#include "bench/common/process_tree.h"
#include "bench/warm/node_peer.h"
#include "bench/warm/node_workload.h"
#include "bench/warm/request_dump.h"
#include "bench/warm/warm_report.h"
#include "bench/warm/warm_workload.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"

namespace zygo::bench {
namespace {

constexpr char kFunction[] = "node";
constexpr double kCpuBarMs = 12;        // the goal: under 12 ms of CPU per request
constexpr double kSpawnBarRatio = 0.1;  // p50 at most 0.1x the spawn-per-request peer's
// A side's CPU is read once it has stopped moving: two reads kSettleStepMs apart that
// agree (within a clock tick), at most kSettleMaxMs.
constexpr int kSettleStepMs = 100;
constexpr int kSettleMaxMs = 3'000;

// CPU seconds a side has used so far; nullopt when its process is gone.
using CpuMeter = std::function<std::optional<double>()>;

// One of the three sides and what it measured.
struct Side {
  std::string who;  // "zygo", "spawn peer", "vm peer"
  CallFn call;
  CpuMeter cpu;
  CpuMeter own_cpu;  // zygo only: the supervisor process itself, without what it runs
  OpenLoopResult result;
  double cpu_seconds = 0;
  double own_cpu_seconds = 0;
};

// `meter` once it has settled. zygo's CPU goes on after a reply: the worker that served
// it exits and the supervisor starts its replacement, which belongs to that request.
absl::StatusOr<double> Settled(const CpuMeter& meter, const std::string& who) {
  std::optional<double> last = meter();
  for (int waited = 0; last.has_value() && waited < kSettleMaxMs; waited += kSettleStepMs) {
    usleep(kSettleStepMs * 1000);
    std::optional<double> now = meter();
    if (!now.has_value()) break;
    const double step = *now - *last;
    last = now;
    if (step < 0.5 / sysconf(_SC_CLK_TCK)) return *last;
  }
  if (!last.has_value()) return absl::UnavailableError(absl::StrCat(who, ": its process is gone"));
  return *last;
}

// Requests first..first+count-1 on `side` at `rate`, and the CPU its side used for them.
absl::Status RunPart(Side& side, int first, int count, double rate) {
  ZYGO_ASSIGN_OR_RETURN(double before, Settled(side.cpu, side.who));
  const double own_before = side.own_cpu ? side.own_cpu().value_or(0) : 0;
  ZYGO_ASSIGN_OR_RETURN(OpenLoopResult part, RunOpenLoop(first, count, rate, side.call));
  ZYGO_ASSIGN_OR_RETURN(double after, Settled(side.cpu, side.who));
  side.cpu_seconds += after - before;
  if (side.own_cpu) side.own_cpu_seconds += side.own_cpu().value_or(0) - own_before;
  AppendOpenLoop(&side.result, std::move(part));
  return absl::OkStatus();
}

// Each side runs the first half of the schedule in order, then the second half in reverse
// order (A B C C B A), so a slow drift of the machine lands on all of them alike.
absl::Status RunInTurns(std::vector<Side>& sides, int requests, double rate) {
  const int half = requests / 2;
  if (half > 0) {
    for (Side& side : sides) ZYGO_RETURN_IF_ERROR(RunPart(side, 0, half, rate));
  }
  for (auto it = sides.rbegin(); it != sides.rend(); ++it) {
    ZYGO_RETURN_IF_ERROR(RunPart(*it, half, requests - half, rate));
  }
  return absl::OkStatus();
}

double CpuMsPerRequest(double seconds, const Side& side) {
  return side.result.latency_ms.empty() ? 0 : seconds * 1e3 / side.result.latency_ms.size();
}

// Registers the function (handler.js in the session's work dir) and waits until it is warm
// after the untimed requests; the milliseconds that took.
absl::StatusOr<double> WarmTheNodeFunction(SupervisorSession& session, int warmup_requests) {
  FunctionSpecOptions spec{kFunction, kNodeEntry};
  spec.runtime = "node";
  ZYGO_RETURN_IF_ERROR(RegisterFunction(*session.api, session.process->WorkDir() + "/node",
                                        NodeHandlerSource(0), spec));
  return WaitWarm(*session.api, kFunction, warmup_requests, ExecCall(session.api.get(), kFunction));
}

absl::Status WarmUp(const CallFn& call, int requests) {
  for (int i = 0; i < requests; ++i) ZYGO_RETURN_IF_ERROR(call(i).status());
  return absl::OkStatus();
}

// The latency table, zygo's phases, CPU per request and the ratios; the bars' verdicts.
absl::StatusOr<int> Report(const WarmOptions& options, const std::string& label,
                           const std::vector<Side>& sides, const std::string& other_line) {
  PhaseSamples phases;
  ZYGO_RETURN_IF_ERROR(CheckExecReplies(sides[0].result.replies, &HandlerResultMatches, &phases));
  std::vector<LatencyRow> rows;
  std::vector<DumpedRun> dumped;
  for (const Side& side : sides) {
    if (&side != &sides[0]) {
      ZYGO_RETURN_IF_ERROR(CheckPeerReplies(side.result.replies, &HandlerResultMatches));
    }
    ZYGO_ASSIGN_OR_RETURN(Summary ms, Summarize(side.result.latency_ms));
    rows.push_back({label, side.who, ms, side.result.late});
    dumped.push_back({label, side.who, &side.result, &side == &sides[0] ? &phases : nullptr});
  }
  ZYGO_ASSIGN_OR_RETURN(PhaseRow phase_row, SummarizePhases(label, phases));
  printf("\n%s\n%s", FormatLatencyTable(rows).c_str(), FormatPhaseTable({phase_row}).c_str());
  const Side& zygo = sides[0];
  const double zygo_cpu = CpuMsPerRequest(zygo.cpu_seconds, zygo);
  const double supervisor_cpu = CpuMsPerRequest(zygo.own_cpu_seconds, zygo);
  printf(
      "CPU per request (user + system, over each side's requests, read once it settled): zygo "
      "%.1f ms (the supervisor process %.1f ms, what it runs %.1f ms: the request's worker and "
      "the start of its replacement)",
      zygo_cpu, supervisor_cpu, zygo_cpu - supervisor_cpu);
  for (size_t i = 1; i < sides.size(); ++i) {
    printf(", %s %.1f ms", sides[i].who.c_str(), CpuMsPerRequest(sides[i].cpu_seconds, sides[i]));
  }
  printf("\n%s\n", other_line.c_str());
  if (!options.dump.empty()) {
    ZYGO_ASSIGN_OR_RETURN(std::string csv, FormatRequestDump(dumped, zygo.result.sent_ns.front()));
    ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(options.dump, csv));
    printf("every request: %s\n", options.dump.c_str());
  }
  printf("\n");
  for (size_t i = 1; i < sides.size(); ++i) {
    const double peer_cpu = CpuMsPerRequest(sides[i].cpu_seconds, sides[i]);
    printf("zygo / %s: p50 %.2fx (%+.3f ms), p99 %.2fx (%+.3f ms), CPU %.2fx (%+.1f ms)\n",
           sides[i].who.c_str(), rows[0].ms.p50 / rows[i].ms.p50, rows[0].ms.p50 - rows[i].ms.p50,
           rows[0].ms.p99 / rows[i].ms.p99, rows[0].ms.p99 - rows[i].ms.p99,
           peer_cpu > 0 ? zygo_cpu / peer_cpu : 0, zygo_cpu - peer_cpu);
  }
  const std::vector<Bar> bars = {
      {absl::StrFormat("zygo p50 <= %gx spawn peer p50 (%s)", kSpawnBarRatio, label),
       rows[0].ms.p50 / rows[1].ms.p50, kSpawnBarRatio},
      {absl::StrFormat("zygo CPU per request <= %g ms", kCpuBarMs), zygo_cpu, kCpuBarMs, "ms"}};
  int failed = 0;
  for (const Bar& bar : bars) {
    printf("%s\n", BarLine(bar).c_str());
    if (!bar.pass()) ++failed;
  }
  return failed;
}

}  // namespace

absl::StatusOr<int> MeasureNodeAgainstPeers(const WarmOptions& options,
                                            SupervisorSession& session) {
  ZYGO_ASSIGN_OR_RETURN(double warm_ms, WarmTheNodeFunction(session, options.warmup_requests));
  const std::string work = session.process->WorkDir();
  const std::string handler_file = work + "/node/handler.js";
  ZYGO_ASSIGN_OR_RETURN(NodeSpawnPeer spawn,
                        NodeSpawnPeer::Create(options.node, work, handler_file, "main"));
  ZYGO_ASSIGN_OR_RETURN(
      std::unique_ptr<PeerServer> vm,
      PeerServer::Start(NodeVmPeerScript(options.node), work, handler_file, "main"));
  ZYGO_ASSIGN_OR_RETURN(PeerConnection vm_connection, PeerConnection::Connect(vm->socket_path()));

  const pid_t supervisor = session.process->pid();
  const pid_t vm_pid = vm->pid();
  std::vector<Side> sides = {
      {"zygo", ExecCall(session.api.get(), kFunction),
       [supervisor] { return TreeCpuSeconds(supervisor); },
       [supervisor] { return ProcessCpuSeconds(supervisor); }},
      {"spawn peer", [&spawn](int index) { return spawn.Call(EventJson(index)); },
       [&spawn]() -> std::optional<double> { return spawn.cpu_seconds(); }},
      {"vm peer", [&vm_connection](int index) { return vm_connection.Call(EventJson(index)); },
       [vm_pid] { return TreeCpuSeconds(vm_pid); }},
  };
  for (size_t i = 1; i < sides.size(); ++i) {
    ZYGO_RETURN_IF_ERROR(WarmUp(sides[i].call, options.warmup_requests));
  }
  printf(
      "method: function 'node' (runtime node, handler.js requiring sixteen builtins, spares 2; "
      "every request in a fresh worker) warm %.0f ms after registering; one keep-alive HTTP/1.1 "
      "connection. Peers, unsandboxed, with %s (%s): spawn peer, `node "
      "bench/warm/node_spawn_runner.js handler.js main EVENT` per request (without the caller's "
      "NODE_* variables), timed from spawn to reap; vm peer, bench/warm/node_vm_peer.js, one node "
      "running each request's handler.js in "
      "a new context (vm.runInNewContext, n8n's shape), a line of JSON per request on a unix "
      "socket. %d untimed requests on each side first; sides take turns (A B C C B A halves); "
      "nearest-rank percentiles\n",
      warm_ms, options.node.c_str(), NodeVersion(options.node).c_str(), options.warmup_requests);
  fflush(stdout);

  OtherWork other([&] { return HelpersCpu(supervisor, vm_pid); });
  const std::string label = absl::StrFormat("%d ms apart", options.slow_interval_ms);
  ZYGO_RETURN_IF_ERROR(RunInTurns(sides, options.slow_requests, 1000.0 / options.slow_interval_ms));
  const std::string other_line = other.Line(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  ZYGO_RETURN_IF_ERROR(vm->Stop());
  return Report(options, label, sides, other_line);
}

}  // namespace zygo::bench
