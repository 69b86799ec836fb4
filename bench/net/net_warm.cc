// The warm half of `zygo bench net`: warming a function per network mode, through the
// bench's own supervisor on the fake internet's machine.
#include "bench/net/net_warm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/background_process.h"
#include "bench/common/stats.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "nlohmann/json.hpp"

namespace zygo::bench {
namespace {

constexpr int kWarmDeadlineMs = 30'000;
constexpr int kPollUs = 2'000;

// A one-line handler for the warm-up; networked modes' requests also resolve (egress:
// through zygo's resolver) and connect, which proves the warm network works, not only
// that it warmed, and time that themselves. The imports are inside main so the warm-up
// imports nothing (socket alone takes 5-8 ms here).
constexpr char kHandler[] = R"(def main(event):
    if not event or 'connect' not in event:
        return {'ok': True}
    import socket, time
    t = time.perf_counter()
    infos = socket.getaddrinfo(event['connect'], event['port'], socket.AF_INET, socket.SOCK_STREAM)
    address = infos[0][4]
    socket.create_connection(address, timeout=5).close()
    return {'connected': address[0], 'ms': (time.perf_counter() - t) * 1000}
)";

const std::vector<std::string>& Modes() {
  static const auto* modes = new std::vector<std::string>{"none", "egress", "full"};
  return *modes;
}

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::string SpecToml(const std::string& name, const std::string& mode) {
  std::string toml = absl::StrCat(
      "name = \"", name,
      "\"\nimage = \"host\"\nruntime = \"python\"\nentry = \"handler.py:main\"\ncode = \".\"\n"
      "cold_after = \"0\"\nspares = 1\n\n[limits]\nmemory = \"256M\"\ntimeout = \"10s\"\n\n"
      "[net]\nmode = \"",
      mode, "\"\n");
  if (mode == "egress")
    absl::StrAppend(&toml, "allow = [\"", kBenchName, ":", kServerPort, "\"]\n");
  return toml;
}

std::string EventFor(const std::string& mode) {
  if (mode == "none") return "{}";
  // Full connects to the address: its DNS path is not what this measures.
  const std::string host = mode == "egress" ? kBenchName : kServerAddress;
  return nlohmann::json{{"connect", host}, {"port", kServerPort}}.dump();
}

// The supervisor's own warm time (its zygote's start until the agent's hello, network
// hookup included), as GET /v1/functions reports it (warm_ms).
absl::StatusOr<double> ReportedWarmMs(SupervisorSession& session, const std::string& name) {
  ZYGO_ASSIGN_OR_RETURN(nlohmann::json list, session.api->CallJson("GET", "/v1/functions", ""));
  for (const nlohmann::json& info : list.value("functions", nlohmann::json::array())) {
    if (info.value("name", "") == name && info.value("warm_ms", 0.0) > 0) {
      return info.value("warm_ms", 0.0);
    }
  }
  return absl::InternalError(absl::StrCat("GET /v1/functions reports no warm_ms for ", name));
}

// Polls GET /v1/functions until `name` is warm; the ms since `start`. Fails at once when
// the supervisor logs that it could not warm it.
absl::StatusOr<double> WaitUntilWarm(SupervisorSession& session, const std::string& name,
                                     double start) {
  const std::string failed = absl::StrCat("function ", name, " could not be warmed");
  for (int poll = 0;; ++poll) {
    ZYGO_ASSIGN_OR_RETURN(nlohmann::json list, session.api->CallJson("GET", "/v1/functions", ""));
    for (const nlohmann::json& info : list.value("functions", nlohmann::json::array())) {
      if (info.value("name", "") == name && info.value("state", "") == "warm") {
        return NowMs() - start;
      }
    }
    if (poll % 25 == 24) {
      const std::string log = session.process->LogTail(1 << 20);
      if (size_t at = log.find(failed); at != std::string::npos) {
        return absl::FailedPreconditionError(log.substr(at, log.find('\n', at) - at));
      }
    }
    if (NowMs() - start > kWarmDeadlineMs) {
      return absl::DeadlineExceededError(
          absl::StrCat("'", name, "' was not warm after ", kWarmDeadlineMs, " ms"));
    }
    usleep(kPollUs);
  }
}

// The request; for networked modes the resolve + connect time the handler measured, ms.
// An error unless the handler answered as expected (networked: connected to the allowed
// server).
absl::StatusOr<double> Request(SupervisorSession& session, const std::string& name,
                               const std::string& mode) {
  const std::string target = absl::StrCat("/v1/functions/", name, "/exec");
  ZYGO_ASSIGN_OR_RETURN(sdk::HttpReply reply, session.api->Call("POST", target, EventFor(mode)));
  const nlohmann::json body =
      nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* result = nullptr;
  if (body.is_object() && body.value("ok", false) == true) {
    if (auto it = body.find("result"); it != body.end() && it->is_object()) result = &*it;
  }
  const bool answered =
      result != nullptr &&
      (mode == "none" ? result->value("ok", false) == true
                      : result->value("connected", "") == kServerAddress &&
                            result->contains("ms") && (*result)["ms"].is_number());
  if (reply.status != 200 || !answered) {
    return absl::InternalError(absl::StrCat("POST ", target, " (", EventFor(mode), "): HTTP ",
                                            reply.status, ": ", reply.body.substr(0, 1500)));
  }
  return mode == "none" ? 0.0 : (*result)["ms"].get<double>();
}

struct RoundResult {
  double warm_ms = 0;
  double up_ms = 0;
  double request_ms = 0;
};

absl::StatusOr<RoundResult> OneFunction(SupervisorSession& session, const std::string& code_dir,
                                        const std::string& name, const std::string& mode) {
  RoundResult result;
  const std::string up = absl::StrCat("/v1/functions?origin=", name,
                                      ".toml&base_dir=", sdk::EscapeQueryValue(code_dir));
  const double start = NowMs();
  absl::StatusOr<nlohmann::json> registered =
      session.api->CallJson("POST", up, SpecToml(name, mode));
  if (!registered.ok()) {
    return absl::Status(registered.status().code(),
                        absl::StrCat("registering '", name, "': ", registered.status().message()));
  }
  ZYGO_ASSIGN_OR_RETURN(result.up_ms, WaitUntilWarm(session, name, start));
  ZYGO_ASSIGN_OR_RETURN(result.warm_ms, ReportedWarmMs(session, name));
  ZYGO_ASSIGN_OR_RETURN(result.request_ms, Request(session, name, mode));
  ZYGO_RETURN_IF_ERROR(
      session.api->CallJson("DELETE", absl::StrCat("/v1/functions/", name), "").status());
  return result;
}

std::string Row(const std::string& label, const Summary& summary, const std::string& extra) {
  return absl::StrFormat("%-52s %5d %9.2f %9.2f %s\n", label, summary.count, summary.p50,
                         summary.p99, extra);
}

}  // namespace

absl::StatusOr<SupervisorSession> StartNetSupervisor(const FakeInternet& net,
                                                     const std::string& supervisor_binary) {
  // The supervisor, and so every zygo-net it starts, reads the upstream from its
  // environment (supervisor/main.cc), which it inherits from this process.
  if (setenv("ZYGO_DNS_UPSTREAM", DnsUpstream().c_str(), 1) != 0) {
    return base::ErrnoStatus(errno, "setenv(ZYGO_DNS_UPSTREAM)");
  }
  SupervisorSession session;
  ZYGO_RETURN_IF_ERROR(net.InMachine([&]() -> absl::Status {
    // Every mode in a sandbox of its own, so that what differs is only the network: with
    // the zygote tree, none's functions would be forks and the others sandboxes.
    absl::StatusOr<SupervisorSession> started =
        StartSession(supervisor_binary, {"--zygote-tree", "off"});
    if (!started.ok()) return started.status();
    session = *std::move(started);
    return absl::OkStatus();
  }));
  return session;
}

absl::StatusOr<NetWarmSamples> MeasureNetWarm(SupervisorSession& session, int rounds, int warmup) {
  const std::string code_dir = session.process->WorkDir() + "/net-handler";
  if (mkdir(code_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", code_dir, ")"));
  }
  ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(code_dir + "/handler.py", kHandler));
  NetWarmSamples samples;
  const std::vector<std::string>& modes = Modes();
  for (int round = 0; round < warmup + rounds; ++round) {
    for (size_t k = 0; k < modes.size(); ++k) {
      const std::string& mode = modes[(k + round) % modes.size()];
      // A fresh name each time: the log line that gives the warm time is then unambiguous.
      const std::string name = absl::StrCat("net-", mode, "-", round);
      absl::StatusOr<RoundResult> result = OneFunction(session, code_dir, name, mode);
      if (!result.ok()) {
        return absl::Status(result.status().code(),
                            absl::StrCat("warm round ", round + 1, ", [net] mode = ", mode, ": ",
                                         result.status().message()));
      }
      if (round < warmup) continue;
      samples.warm_ms[mode].push_back(result->warm_ms);
      samples.up_ms[mode].push_back(result->up_ms);
      if (mode != "none") samples.request_ms[mode].push_back(result->request_ms);
    }
  }
  return samples;
}

absl::Status PrintNetWarm(const NetWarmSamples& samples) {
  printf(
      "\nwarming a one-line Python function with `[net] mode = MODE` (supervisor on the "
      "machine; rounds of up / one request / down, modes interleaved), ms\n");
  printf("%-52s %5s %9s %9s %s\n", "mode: what", "runs", "p50", "p99", "added p50 over none");
  const std::vector<std::pair<const std::map<std::string, std::vector<double>>*, const char*>>
      groups = {{&samples.warm_ms, "warm-up, the supervisor's own timer"},
                {&samples.up_ms, "up to \"warm\" through the API"}};
  for (const auto& [by_mode, what] : groups) {
    auto none = by_mode->find("none");
    if (none == by_mode->end()) return absl::InternalError("no warm samples for none");
    ZYGO_ASSIGN_OR_RETURN(Summary none_summary, Summarize(none->second));
    for (const std::string& mode : Modes()) {
      auto it = by_mode->find(mode);
      if (it == by_mode->end()) return absl::InternalError(absl::StrCat("no samples for ", mode));
      ZYGO_ASSIGN_OR_RETURN(Summary summary, Summarize(it->second));
      const std::string extra =
          mode == "none" ? "-" : absl::StrFormat("%+.2f ms", summary.p50 - none_summary.p50);
      printf("%s", Row(absl::StrCat(mode, ": ", what), summary, extra).c_str());
    }
  }
  for (const char* mode : {"egress", "full"}) {
    auto it = samples.request_ms.find(mode);
    if (it == samples.request_ms.end()) return absl::InternalError("no request samples");
    ZYGO_ASSIGN_OR_RETURN(Summary summary, Summarize(it->second));
    printf("%s", Row(absl::StrCat(mode, ": warm request, ",
                                  std::string(mode) == "egress" ? "resolve+connect" : "connect",
                                  " in handler"),
                     summary, absl::StrFormat("%d of %d connected", summary.count, summary.count))
                     .c_str());
  }
  return absl::OkStatus();
}

}  // namespace zygo::bench
