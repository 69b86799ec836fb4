// `zygo bench load`: see load_bench.h and docs/bench-warm.md.
#include "bench/warm/load_bench.h"

#include <stdio.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/other_work.h"
#include "bench/warm/warm_peer.h"
#include "bench/warm/warm_report.h"
#include "bench/warm/warm_setup.h"
#include "core/base/status_macros.h"

namespace zygo::bench {
namespace {

constexpr char kBench[] = "load";
constexpr double kBarRps = 1000;

// One side's connections, each a CallFn that checks its reply succeeded.
using CallFactory = std::function<absl::StatusOr<CallFn>(int)>;

CallFactory ZygoCalls(const std::string& socket) {
  return [socket](int) -> absl::StatusOr<CallFn> {
    ZYGO_ASSIGN_OR_RETURN(sdk::ApiConnection api, sdk::ApiConnection::Connect(socket));
    auto shared = std::make_shared<sdk::ApiConnection>(std::move(api));
    return CallFn([shared](int index) -> absl::StatusOr<std::string> {
      ZYGO_ASSIGN_OR_RETURN(std::string body, Exec(*shared, "warm", "", index));
      if (!absl::StartsWith(body, "{\"ok\":true")) {
        return absl::InternalError(absl::StrCat("the request failed: ", body.substr(0, 1500)));
      }
      return std::string();  // replies are not kept: thousands a second add up
    });
  };
}

CallFactory PeerCalls(const std::string& socket) {
  return [socket](int) -> absl::StatusOr<CallFn> {
    ZYGO_ASSIGN_OR_RETURN(PeerConnection peer, PeerConnection::Connect(socket));
    auto shared = std::make_shared<PeerConnection>(std::move(peer));
    return CallFn([shared](int index) -> absl::StatusOr<std::string> {
      ZYGO_ASSIGN_OR_RETURN(std::string line, shared->Call(EventJson(index)));
      if (!absl::StartsWith(line, "{\"ok\": true")) {
        return absl::InternalError(
            absl::StrCat("the peer's request failed: ", line.substr(0, 1500)));
      }
      return std::string();
    });
  };
}

struct LoadSide {
  std::string who;
  ClosedLoopResult result;
};

void Append(LoadSide* side, ClosedLoopResult part) {
  side->result.latency_ms.insert(side->result.latency_ms.end(), part.latency_ms.begin(),
                                 part.latency_ms.end());
  side->result.completed += part.completed;
  side->result.seconds += part.seconds;
}

// zygo, peer, peer, zygo, each for half the time (ABBA), so drift lands on both alike.
absl::Status DriveBoth(const WarmOptions& options, const CallFactory& zygo, const CallFactory& peer,
                       LoadSide* zygo_side, LoadSide* peer_side) {
  const double half = options.seconds / 2;
  for (int turn = 0; turn < 4; ++turn) {
    const bool zygo_turn = turn == 0 || turn == 3;
    ZYGO_ASSIGN_OR_RETURN(ClosedLoopResult part,
                          RunClosedLoop(options.connections, half, zygo_turn ? zygo : peer));
    Append(zygo_turn ? zygo_side : peer_side, std::move(part));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Measure(const WarmOptions& options, const HostInfo& host,
                            SupervisorSession& session) {
  const std::string work = session.process->WorkDir();
  ZYGO_ASSIGN_OR_RETURN(std::unique_ptr<PeerServer> peer,
                        PeerServer::Start(PreforkPeerScript(options.python), work,
                                          work + "/warm/handler.py", "main"));
  LoadSide zygo_side{"zygo", {}}, peer_side{"peer", {}};
  const pid_t supervisor_pid = session.process->pid();
  OtherWork other([&] { return HelpersCpu(supervisor_pid, peer->pid()); });
  ZYGO_RETURN_IF_ERROR(DriveBoth(options, ZygoCalls(session.process->http_socket()),
                                 PeerCalls(peer->socket_path()), &zygo_side, &peer_side));
  ZYGO_RETURN_IF_ERROR(peer->Stop());
  const std::string other_line = other.Line(host.nproc);

  printf("\n%-6s %11s %9s %9s %9s %9s %9s %9s\n", "who", "connections", "seconds", "requests",
         "rps", "p50 ms", "p99 ms", "max ms");
  double rps[2] = {0, 0};
  int i = 0;
  for (const LoadSide* side : {&zygo_side, &peer_side}) {
    ZYGO_ASSIGN_OR_RETURN(Summary s, Summarize(side->result.latency_ms));
    rps[i++] = side->result.completed / side->result.seconds;
    printf("%-6s %11d %9.1f %9lld %9.0f %9.3f %9.3f %9.3f\n", side->who.c_str(),
           options.connections, side->result.seconds,
           static_cast<long long>(side->result.completed), rps[i - 1], s.p50, s.p99, s.max);
  }
  printf("%s\n", other_line.c_str());
  printf("\nzygo / peer: %.2fx the requests per second\n", rps[0] / rps[1]);
  MinBar bar{
      absl::StrFormat(">= %.0f requests/s through one function (nproc %d)", kBarRps, host.nproc),
      rps[0], kBarRps};
  // The bar's value is a rate, not a ratio: print it as one.
  printf("bar: %s: %s (%.0f requests/s)\n", bar.what.c_str(), bar.pass() ? "PASS" : "FAIL",
         bar.value);
  return bar.pass() ? 0 : 1;
}

}  // namespace

int RunLoadBench(int argc, char** argv) {
  return RunWarmPathBench(
      WarmBenchKind::kLoad, kBench, argc, argv,
      [](const WarmOptions& options, const std::string& binary, const HostInfo& host) {
        absl::StatusOr<SupervisorSession> session = StartSession(binary, SupervisorArgs(options));
        if (!session.ok()) return FailBench(kBench, session.status());
        absl::StatusOr<double> warm_ms =
            WarmTheWarmFunction(*session, options.spares, options.warmup_requests);
        if (!warm_ms.ok()) return FailBench(kBench, warm_ms.status());
        printf(
            "method: function 'warm' (python, handler.py importing sixteen modules, spares "
            "%d), warm in %.0f ms; %d keep-alive connections, each sending its next request "
            "when the last reply came (closed loop); zygo, peer, peer, zygo for %.1f s each; "
            "the peer is bench/warm/prefork_peer.py (unsandboxed, os.fork() per request) on "
            "the same connections; nproc %d\n",
            options.spares, *warm_ms, options.connections, options.seconds / 2, host.nproc);
        fflush(stdout);
        absl::StatusOr<int> failed = Measure(options, host, *session);
        return FinishBench(kBench, failed, *session, options.strict);
      });
}

}  // namespace zygo::bench
