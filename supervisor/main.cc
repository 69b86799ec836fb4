// `zygo serve` / `bazel run //supervisor`: the daemon that keeps functions warm and serves
// them over HTTP/JSON and gRPC on unix sockets. With nothing registered it serves a demo
// Python function on the host image and prints how to call it.
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/base/helper_binary.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/sched_attr.h"
#include "core/cgroup.h"
#include "core/units.h"
#include "sdk/cpp/zygo/socket_path.h"
#include "supervisor/code_policy.h"
#include "supervisor/connection_limits.h"
#include "supervisor/event_limit.h"
#include "supervisor/grpc_server.h"
#include "supervisor/http_server.h"
#include "supervisor/log.h"
#include "supervisor/socket_file.h"
#include "supervisor/state_store.h"
#include "supervisor/supervisor_service.h"

namespace zygo::supervisor {
namespace {

using sdk::DefaultSocketPath;
using sdk::ResolveSocketPath;

constexpr char kUsage[] =
    "Usage: zygo serve [OPTIONS]\n"
    "\n"
    "Runs the supervisor: keeps registered functions warm and serves them over HTTP/JSON\n"
    "and gRPC on unix sockets. Register functions with `zygo up SPEC.toml`. At start it\n"
    "removes the cgroups a killed supervisor left beside its own (see zygo doctor).\n"
    "\n"
    "Options:\n"
    "  --listen PATH        the HTTP/JSON socket (default: $ZYGO_SOCKET, else\n"
    "                       /run/zygo/zygo.sock for root, $XDG_RUNTIME_DIR/zygo/zygo.sock)\n"
    "  --grpc-listen PATH   the gRPC socket (default: zygo-grpc.sock beside the HTTP one)\n"
    "  --state-dir DIR      registered functions and scripts (default: /var/lib/zygo/\n"
    "                       supervisor for root, else $XDG_STATE_HOME/zygo/supervisor)\n"
    "  --code-root DIR      functions' code must lie inside DIR (repeatable; default:\n"
    "                       anywhere but /, system directories and the supervisor's own\n"
    "                       state and socket directories, which are always refused)\n"
    "  --no-demo            do not register the demo function when nothing is registered\n"
    "  --allow-unlimited    run functions without cgroup limits when none can be made\n"
    "  --insecure-registry HOST[:PORT]\n"
    "                       pull functions' images from this registry over plain HTTP\n"
    "                       (repeatable; a registry on loopback is plain HTTP anyway)\n"
    "  --zygote-tree on|off Python functions fork their zygotes from one runtime zygote\n"
    "                       per image, each sealed in a sandbox of its own (default on;\n"
    "                       off: each function starts its own interpreter)\n"
    "  --workers N          requests running at once over all functions (default 64)\n"
    "  --max-queued N       requests waiting for a worker; past it a request gets 429\n"
    "                       (default 10000)\n"
    "  -h, --help           this text\n"
    "\n"
    "Limits of the HTTP socket (not the gRPC one). The caps are lowered to fit the\n"
    "open-file limit, which zygo serve raises to its hard limit at start:\n"
    "  --http-request-timeout D     a request's head and body must arrive within D (of\n"
    "                               the connection's start, or a later request's first\n"
    "                               byte), else 408 and close (default 30s; D: 500ms, 2m)\n"
    "  --http-idle-timeout D        a kept-alive connection idle for D is closed\n"
    "                               (default 75s)\n"
    "  --http-max-connections N     connections open at once, all clients (default 4096)\n"
    "  --http-max-connections-per-client N\n"
    "                               of one client, a uid (default 256); past either cap\n"
    "                               a new connection gets 503 and is closed at once\n";

struct ServeFlags {
  std::string listen;
  std::string grpc_listen;
  std::string state_dir;
  std::vector<std::string> code_roots;  // resolved
  bool demo = true;
  bool allow_unlimited = false;
  bool zygote_tree = true;
  std::vector<std::string> insecure_registries;
  int workers = 64;
  size_t max_queued = 10'000;
  HttpLimits http;
};

// A duration flag, read as `zygo run --timeout` reads one: 1 ms to 1 h.
absl::StatusOr<absl::Duration> ParseTimeout(const char* name, const std::string& text) {
  absl::StatusOr<int64_t> ms = core::ParseDurationMs(text);
  if (!ms.ok() || *ms > 3'600'000) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must be a duration from 1ms to 1h (500ms, 30s, 2m), not '", text, "'"));
  }
  return absl::Milliseconds(*ms);
}

absl::StatusOr<size_t> ParseCount(const char* name, const std::string& text) {
  size_t count = 0;
  if (!absl::SimpleAtoi(text, &count) || count < 1 || count > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be 1..1000000, not '", text, "'"));
  }
  return count;
}

int Fail(const std::string& message) {
  Log(LogLevel::kError, message);
  return 125;
}

absl::StatusOr<ServeFlags> ParseFlags(int argc, char** argv) {
  ServeFlags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      return std::string(argv[++i]);
    };
    absl::StatusOr<std::string> v;
    if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      exit(0);
    } else if (arg == "--listen") {
      if (!(v = value("--listen")).ok()) return v.status();
      flags.listen = *v;
    } else if (arg == "--grpc-listen") {
      if (!(v = value("--grpc-listen")).ok()) return v.status();
      flags.grpc_listen = *v;
    } else if (arg == "--state-dir") {
      if (!(v = value("--state-dir")).ok()) return v.status();
      flags.state_dir = *v;
    } else if (arg == "--code-root") {
      if (!(v = value("--code-root")).ok()) return v.status();
      absl::StatusOr<std::string> root = ResolveCodeRoot(*v);
      if (!root.ok()) return root.status();
      flags.code_roots.push_back(*root);
    } else if (arg == "--no-demo") {
      flags.demo = false;
    } else if (arg == "--allow-unlimited") {
      flags.allow_unlimited = true;
    } else if (arg == "--insecure-registry") {
      if (!(v = value("--insecure-registry")).ok()) return v.status();
      if (v->empty() || absl::StrContains(*v, "/")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--insecure-registry takes HOST or HOST:PORT (no scheme, no path), not '", *v, "'"));
      }
      flags.insecure_registries.push_back(*v);
    } else if (arg == "--zygote-tree") {
      if (!(v = value("--zygote-tree")).ok()) return v.status();
      if (*v != "on" && *v != "off") {
        return absl::InvalidArgumentError(
            absl::StrCat("--zygote-tree must be on or off, not '", *v, "'"));
      }
      flags.zygote_tree = *v == "on";
    } else if (arg == "--http-request-timeout" || arg == "--http-idle-timeout") {
      if (!(v = value(arg.c_str())).ok()) return v.status();
      absl::StatusOr<absl::Duration> timeout = ParseTimeout(arg.c_str(), *v);
      if (!timeout.ok()) return timeout.status();
      (arg == "--http-request-timeout" ? flags.http.request_timeout : flags.http.idle_timeout) =
          *timeout;
    } else if (arg == "--http-max-connections" || arg == "--http-max-connections-per-client") {
      if (!(v = value(arg.c_str())).ok()) return v.status();
      absl::StatusOr<size_t> count = ParseCount(arg.c_str(), *v);
      if (!count.ok()) return count.status();
      (arg == "--http-max-connections" ? flags.http.max_connections
                                       : flags.http.max_connections_per_client) = *count;
    } else if (arg == "--max-queued") {
      if (!(v = value("--max-queued")).ok()) return v.status();
      absl::StatusOr<size_t> count = ParseCount("--max-queued", *v);
      if (!count.ok()) return count.status();
      flags.max_queued = *count;
    } else if (arg == "--workers") {
      if (!(v = value("--workers")).ok()) return v.status();
      flags.workers = atoi(v->c_str());
      if (flags.workers < 1 || flags.workers > 1024) {
        return absl::InvalidArgumentError("--workers must be 1..1024");
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", arg, "' (see zygo serve --help)"));
    }
  }
  return flags;
}

constexpr char kDemoHandler[] = R"(# The demo function `zygo serve` registers when nothing else is.
# Its imports run once, in the zygote; every request is a fork of that warm process.
import platform
import random


def main(event):
    name = (event or {}).get("name", "world") if isinstance(event, dict) else "world"
    return {"greeting": f"hello, {name}", "python": platform.python_version(),
            "lucky_number": random.randint(1, 100)}
)";

constexpr char kDemoSpec[] = R"(# Registered by `zygo serve` when nothing else is.
name = "hello"
image = "host"
runtime = "python"
entry = "handler.py:main"
code = "."
[limits]
memory = "128M"
timeout = "10s"
)";

absl::Status RegisterDemo(SupervisorService& service, const std::string& state_dir) {
  const std::string dir = absl::StrCat(state_dir, "/demo");
  mkdir(dir.c_str(), 0755);
  FILE* file = fopen(absl::StrCat(dir, "/handler.py").c_str(), "w");
  if (file == nullptr)
    return absl::InternalError(absl::StrCat("cannot write ", dir, "/handler.py"));
  fputs(kDemoHandler, file);
  fclose(file);
  return service.Up(kDemoSpec, "demo.toml", dir).status();
}

// The operator's roots, and what of the supervisor's own no function may see: its sockets
// (the state dir the service adds itself). The demo's code is the supervisor's own.
CodePolicy BuildCodePolicy(const ServeFlags& flags, const std::string& state_dir,
                           const std::vector<std::string>& sockets) {
  CodePolicy policy;
  policy.roots = flags.code_roots;
  for (const std::string& socket : sockets) {
    policy.private_dirs.push_back(
        {ResolvePolicyPath(ParentDir(socket)),
         "the supervisor's socket directory, through which the API is reached",
         /*inside_too=*/false});
  }
  policy.own_code_dirs.push_back(ResolvePolicyPath(absl::StrCat(state_dir, "/demo")));
  return policy;
}

// A supervisor killed with SIGKILL (or a zygo run) left its cgroups, with every function's
// and request's inside, beside where this one makes its own; its sandboxes die with it, so
// their last processes are waited for a moment. Nothing else is touched
// (CgroupDriver::SweepStale).
void RemoveStaleCgroups(core::CgroupDriver& cgroups) {
  std::vector<std::string> removed;
  for (const core::StaleCgroup& stale :
       cgroups.SweepStale({.remove = true, .wait_for_members = absl::Seconds(3)})) {
    if (stale.removed) {
      removed.push_back(stale.name);
    } else {
      Log(LogLevel::kWarning,
          absl::StrCat("kept the stale cgroup ", stale.name, " of the gone pid ",
                       static_cast<int>(stale.owner), ": ", stale.kept_because));
    }
  }
  if (removed.empty()) return;
  Log(LogLevel::kInfo,
      absl::StrCat("removed ", removed.size(), " stale cgroup", removed.size() == 1 ? "" : "s",
                   " of killed zygo processes: ", absl::StrJoin(removed, ", ")));
}

// The host's cgroup driver, put in place and tried once (a cgroup made with limits and
// removed again), so that a host where no limit can be applied is refused at start, not
// at every request. Stale cgroups of killed supervisors are removed first.
absl::StatusOr<std::unique_ptr<core::CgroupDriver>> PrepareCgroups() {
  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> driver =
      core::ProbeCgroupDriver({.purpose = "zygo serve"});
  if (!driver.ok()) return driver.status();
  if (absl::Status placed = (*driver)->Prepare(); !placed.ok()) return placed;
  RemoveStaleCgroups(**driver);
  absl::StatusOr<std::unique_ptr<core::Cgroup>> trial =
      (*driver)->Create({.memory_bytes = 64 << 20, .pids_max = 16, .cpus = 0.5});
  if (!trial.ok()) return trial.status();
  if (absl::Status removed = (*trial)->Destroy(); !removed.ok()) return removed;
  return driver;
}

// Raises the soft RLIMIT_NOFILE to the hard one (the soft limit is often 1,024, which a
// few hundred idle clients used to exhaust) and returns the soft limit now in force.
uint64_t RaiseOpenFileLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    struct rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

// zygo-agent-RUNTIME, beside the supervisor or in agents/RUNTIME; "" when missing (a
// function on that runtime then fails to warm, saying so).
std::string FindAgent(absl::string_view runtime) {
  absl::StatusOr<std::string> found =
      base::FindHelperBinary(absl::StrCat("zygo-agent-", runtime), absl::StrCat("agents/", runtime),
                             "a warm-function agent");
  return found.ok() ? *found : "";
}

int Serve(const ServeFlags& flags) {
  // First: the functions loaded below start warming at once, each holding fds.
  const uint64_t open_files = RaiseOpenFileLimit();
  const std::string http_socket = ResolveSocketPath(flags.listen);
  const std::string grpc_socket =
      !flags.grpc_listen.empty()
          ? flags.grpc_listen
          : absl::StrCat(http_socket.substr(0, http_socket.rfind('/') + 1), "zygo-grpc.sock");
  std::string state_dir = flags.state_dir;
  if (state_dir.empty()) {
    absl::StatusOr<std::string> dir = DefaultStateDir();
    if (!dir.ok()) return Fail(std::string(dir.status().message()));
    state_dir = *dir;
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(state_dir);
  if (!store.ok()) return Fail(std::string(store.status().message()));

  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> cgroups = PrepareCgroups();
  if (!cgroups.ok() && !flags.allow_unlimited) {
    return Fail(std::string(core::CannotApplyLimits(cgroups.status()).message()));
  }
  SupervisorOptions options;
  options.workers = flags.workers;
  options.max_queued = flags.max_queued;
  options.code_policy = BuildCodePolicy(flags, state_dir, {http_socket, grpc_socket});
  options.host.cgroups = cgroups.ok() ? cgroups->get() : nullptr;
  options.host.allow_unlimited = flags.allow_unlimited;
  options.zygote_tree = flags.zygote_tree;
  options.host.insecure_registries = flags.insecure_registries;
  options.host.python_agent = FindAgent("python");
  options.host.exec_agent = FindAgent("exec");
  options.host.node_agent = FindAgent("node");
  absl::StatusOr<std::string> network_helper =
      base::FindHelperBinary("zygo-net", "net", "the network helper for egress/full functions");
  if (network_helper.ok()) options.host.network_helper = *network_helper;
  // The same test hooks as `zygo run`: a test's pasta and fake DNS server.
  if (const char* pasta = getenv("ZYGO_PASTA"); pasta != nullptr) options.host.pasta_path = pasta;
  if (const char* dns = getenv("ZYGO_DNS_UPSTREAM"); dns != nullptr) {
    options.host.dns_upstream = dns;
  }
  std::vector<std::string> warnings;
  absl::StatusOr<std::unique_ptr<SupervisorService>> service =
      SupervisorService::Create(*std::move(store), options, &warnings);
  if (!service.ok()) return Fail(std::string(service.status().message()));
  for (const std::string& warning : warnings) Log(LogLevel::kWarning, warning);
  if (flags.demo && (*service)->List().empty()) {
    absl::Status demo = RegisterDemo(**service, state_dir);
    if (!demo.ok()) return Fail(absl::StrCat("demo function: ", demo.message()));
  }

  const HttpLimits http_limits = FitToOpenFiles(flags.http, open_files);
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Listen(http_socket, service->get(), http_limits);
  if (!http.ok()) return Fail(std::string(http.status().message()));
  absl::StatusOr<std::unique_ptr<GrpcServer>> grpc =
      GrpcServer::Listen(grpc_socket, service->get());
  if (!grpc.ok()) return Fail(std::string(grpc.status().message()));

  printf("zygo serve: listening on %s (HTTP/JSON) and %s (gRPC); state in %s\n",
         http_socket.c_str(), grpc_socket.c_str(), state_dir.c_str());
  if (cgroups.ok()) {
    printf("  limits: cgroup %s, %s\n", (*cgroups)->name(), (*cgroups)->placement().detail.c_str());
  } else {
    printf(
        "  limits: NONE (--allow-unlimited): functions run without memory, pids or cpu "
        "limits, and every reply's outcome says limits_applied false; %s\n",
        std::string(cgroups.status().message()).c_str());
  }
  printf(
      "  HTTP: up to %zu connections, %zu per client (open files: %llu); requests within "
      "%s, idle connections closed after %s; events up to %zu bytes\n",
      http_limits.max_connections, http_limits.max_connections_per_client,
      static_cast<unsigned long long>(open_files),
      absl::FormatDuration(http_limits.request_timeout).c_str(),
      absl::FormatDuration(http_limits.idle_timeout).c_str(), kMaxEventBytes);
  for (const FunctionInfo& info : (*service)->List()) {
    printf("  function %-16s %s %s on %s\n", info.name.c_str(), RuntimeName(info.runtime),
           info.pool ? "(runtime pool)" : info.entry.c_str(), info.image.c_str());
  }
  bool has_demo = false;
  for (const FunctionInfo& info : (*service)->List()) has_demo = has_demo || info.name == "hello";
  if (has_demo) {
    // `zygo exec` finds the default socket by itself; any other one it must be told.
    const std::string socket_flag =
        http_socket == DefaultSocketPath() ? "" : absl::StrCat(" --socket ", http_socket);
    printf(
        "Try:\n  curl --unix-socket %s -d '{\"name\": \"zygo\"}' "
        "http://zygo/v1/functions/hello/exec\n  zygo exec%s hello --data '{\"name\": \"zygo\"}'\n",
        http_socket.c_str(), socket_flag.c_str());
  } else {
    printf("Register a function with: zygo up SPEC.toml (docs/function-spec.md)\n");
  }
  fflush(stdout);

  std::thread http_thread([&] { (*http)->Run(); });
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  Log(LogLevel::kInfo, absl::StrCat(strsignal(signal_number), ", stopping"));
  (*http)->Stop();
  http_thread.join();
  (*grpc)->Shutdown();
  (*service)->Shutdown();
  return 0;
}

}  // namespace
}  // namespace zygo::supervisor

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so every thread inherits the mask
  // and only sigwait() in main sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Before any thread or zygote exists, so all of them inherit it: every request wakes
  // four tasks in turn (loop thread, worker, request child, worker again), and each
  // that lands on a CPU running something CPU-bound would otherwise wait up to a whole
  // default slice for it. Best effort: without it requests are only slower in the tail.
  (void)zygo::base::sys::RawRequestSlice(zygo::base::sys::kShortSliceNs);
  absl::StatusOr<zygo::supervisor::ServeFlags> flags = zygo::supervisor::ParseFlags(argc, argv);
  if (!flags.ok()) return zygo::supervisor::Fail(std::string(flags.status().message()));
  return zygo::supervisor::Serve(*flags);
}
