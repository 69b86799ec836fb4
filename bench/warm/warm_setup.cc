// Set-up shared by the warm-path benches.
#include "bench/warm/warm_setup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "bench/common/background_process.h"
#include "bench/common/measured_zygo.h"
#include "bench/common/process_tree.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"

namespace zygo::bench {
namespace {

constexpr int kWarmDeadlineMs = 60'000;

#ifdef __OPTIMIZE__
constexpr char kBuild[] = "optimised build";
#else
constexpr char kBuild[] =
    "UNOPTIMISED build: use `bazel build -c opt //cli:zygo //supervisor` for numbers to publish";
#endif

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::string MeasuredZygoPath() {
  absl::StatusOr<std::string> zygo = MeasuredZygo("");
  return zygo.ok() ? *zygo : "unknown";
}

}  // namespace

HostInfo PrintHost(const WarmOptions& options, const std::string& supervisor_binary) {
  HostInfo host = ProbeHost(options.bwrap);
  printf("%s\n", HostLine(host).c_str());
  if (HostWasBusy(host)) {
    printf(
        "note: the host was busy before the bench (load %.2f on %d CPUs); these numbers say "
        "as much about the machine as about zygo\n",
        host.load[0], host.nproc);
  }
  printf("zygo: %s (%s); supervisor: %s%s\n", MeasuredZygoPath().c_str(), kBuild,
         supervisor_binary.c_str(),
         options.quick ? "; --quick: a smoke run, not for publishing" : "");
  fflush(stdout);
  return host;
}

int FailBench(const char* bench, const absl::Status& status) {
  fflush(stdout);
  fprintf(stderr, "zygo bench %s: %s\n", bench, std::string(status.message()).c_str());
  return 125;
}

int RunWarmPathBench(WarmBenchKind kind, const char* bench, int argc, char** argv,
                     const WarmMeasure& measure) {
  absl::StatusOr<WarmOptions> options = ParseWarmFlags(kind, argc, argv);
  if (!options.ok()) return FailBench(bench, options.status());
  if (options->help) {
    fputs(WarmUsage(kind), stdout);
    return 0;
  }
  absl::StatusOr<std::string> binary = FindSupervisorBinary(options->supervisor);
  if (!binary.ok()) return FailBench(bench, binary.status());
  const HostInfo host = PrintHost(*options, *binary);
  return measure(*options, *binary, host);
}

int FinishBench(const char* bench, const absl::StatusOr<int>& failed, SupervisorSession& session,
                bool strict) {
  if (!failed.ok()) {
    return FailBench(bench,
                     absl::Status(failed.status().code(),
                                  absl::StrCat(failed.status().message(), "\nsupervisor log:\n",
                                               session.process->LogTail())));
  }
  if (absl::Status stopped = session.process->Stop(); !stopped.ok()) {
    return FailBench(bench, stopped);
  }
  fflush(stdout);
  return strict && *failed > 0 ? 1 : 0;
}

absl::StatusOr<SupervisorSession> StartSession(const std::string& supervisor_binary,
                                               std::vector<std::string> args) {
  SupervisorSession session;
  SupervisorProcess::Options options;
  options.binary = supervisor_binary;
  options.args = std::move(args);
  ZYGO_ASSIGN_OR_RETURN(session.process, SupervisorProcess::Start(options));
  ZYGO_ASSIGN_OR_RETURN(sdk::ApiConnection api,
                        sdk::ApiConnection::Connect(session.process->http_socket()));
  session.api = std::make_unique<sdk::ApiConnection>(std::move(api));
  return session;
}

absl::Status RegisterFunction(sdk::ApiConnection& api, const std::string& dir,
                              const std::string& handler_source, const FunctionSpecOptions& spec) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", dir, ")"));
  }
  if (!handler_source.empty()) {
    const std::string file =
        spec.entry.empty() ? "handler.py" : spec.entry.substr(0, spec.entry.find(':'));
    ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(dir + "/" + file, handler_source));
  }
  const std::string target = absl::StrCat("/v1/functions?origin=", sdk::EscapeQueryValue(spec.name),
                                          ".toml&base_dir=", sdk::EscapeQueryValue(dir));
  absl::StatusOr<nlohmann::json> info = api.CallJson("POST", target, FunctionSpecToml(spec));
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        absl::StrCat("registering '", spec.name, "': ", info.status().message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> WarmTheWarmFunction(SupervisorSession& session, int spares,
                                           int warmup_requests) {
  FunctionSpecOptions spec{"warm", "handler.py:main"};
  spec.spares = spares;
  ZYGO_RETURN_IF_ERROR(
      RegisterFunction(*session.api, session.process->WorkDir() + "/warm", HandlerSource(0), spec));
  return WaitWarm(*session.api, "warm", warmup_requests, ExecCall(session.api.get(), "warm"));
}

absl::StatusOr<double> WaitWarm(sdk::ApiConnection& api, const std::string& name, int requests,
                                const CallFn& call) {
  const double start = NowMs();
  for (;;) {
    ZYGO_ASSIGN_OR_RETURN(nlohmann::json list, api.CallJson("GET", "/v1/functions", ""));
    std::string state = "missing";
    for (const nlohmann::json& info : list.value("functions", nlohmann::json::array())) {
      if (info.value("name", "") == name) state = info.value("state", "");
    }
    if (state == "warm") break;
    if (NowMs() - start > kWarmDeadlineMs) {
      return absl::DeadlineExceededError(
          absl::StrCat("'", name, "' was not warm after ", kWarmDeadlineMs, " ms (", state, ")"));
    }
    usleep(2'000);
  }
  const double warm_ms = NowMs() - start;
  for (int i = 0; i < requests; ++i) {
    absl::StatusOr<std::string> reply = call(i);
    if (!reply.ok()) {
      return absl::Status(
          reply.status().code(),
          absl::StrCat("warm-up request ", i + 1, " to '", name, "': ", reply.status().message()));
    }
  }
  return warm_ms;
}

absl::StatusOr<std::string> Exec(sdk::ApiConnection& api, const std::string& name,
                                 const std::string& script_digest, int index) {
  std::string target = absl::StrCat("/v1/functions/", name, "/exec");
  if (!script_digest.empty())
    absl::StrAppend(&target, "?script=", sdk::EscapeQueryValue(script_digest));
  ZYGO_ASSIGN_OR_RETURN(sdk::HttpReply reply, api.Call("POST", target, EventJson(index)));
  if (reply.status != 200) {
    return absl::InternalError(
        absl::StrCat("POST ", target, ": HTTP ", reply.status, ": ", reply.body.substr(0, 1500)));
  }
  return std::move(reply.body);
}

CallFn ExecCall(sdk::ApiConnection* api, const std::string& name) {
  return [api, name](int index) { return Exec(*api, name, "", index); };
}

std::optional<double> HelpersCpu(pid_t supervisor, pid_t peer) {
  std::optional<double> total = TreeCpuSeconds(supervisor);
  if (!total.has_value()) return std::nullopt;
  if (peer > 0) *total += TreeCpuSeconds(peer).value_or(0);
  return total;
}

absl::StatusOr<std::string> PutScript(sdk::ApiConnection& api, const std::string& source) {
  ZYGO_ASSIGN_OR_RETURN(nlohmann::json reply, api.CallJson("PUT", "/v1/scripts", source));
  std::string digest = reply.value("digest", "");
  if (digest.empty())
    return absl::InternalError(absl::StrCat("PUT /v1/scripts: no digest in ", reply.dump()));
  return digest;
}

}  // namespace zygo::bench
