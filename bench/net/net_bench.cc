#include "bench/net/net_bench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/common/flag_set.h"
#include "bench/common/host_info.h"
#include "bench/common/interleaved.h"
#include "bench/common/measured_zygo.h"
#include "bench/common/other_work.h"
#include "bench/common/stats.h"
#include "bench/common/timed_spawn.h"
#include "bench/net/bench_internet.h"
#include "bench/net/net_throughput.h"
#include "bench/net/net_warm.h"
#include "bench/warm/warm_setup.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

extern char** environ;

namespace zygo::bench {
namespace {

constexpr char kUsage[] = R"(Usage: zygo bench net [flags]

What a network mode adds to a one-shot `zygo run ... host /bin/true` (none, full,
egress with one allowed name) and to warming a function (`[net] mode = ...` through the
bench's own supervisor); the time to connect to an allowed TCP server, and the bytes per
second over one connection from it, through the sandbox against the same from the
machine directly; for egress also the time from asking zygo's resolver to a usable
connection. Everything runs in a fake internet of network namespaces the bench makes
and removes; the real network is never used. Root.

Flags:
  --runs N             timed runs of each one-shot and connect case, interleaved (default 30)
  --warmup N           untimed rounds first, in every part (default 1)
  --warm-rounds N      timed rounds of up / request / down per mode (default 15)
  --throughput-runs N  timed streams per path (default 5)
  --throughput-mib N   MiB per stream, over one TCP connection (default 64)
  --zygo PATH          the zygo binary to measure (default: this one)
  --supervisor PATH    the supervisor binary (default: found next to zygo)
  -h, --help           this text
)";

struct NetOptions {
  int runs = 30;
  int warmup = 1;
  int warm_rounds = 15;
  int throughput_runs = 5;
  int throughput_mib = 64;
  std::string zygo;
  std::string supervisor;
  bool help = false;
};

absl::StatusOr<NetOptions> ParseFlags(int argc, char** argv) {
  NetOptions options;
  FlagSet flags("net");
  flags.Count("--runs", &options.runs)
      .Count("--warmup", &options.warmup, 0)
      .Count("--warm-rounds", &options.warm_rounds)
      .Count("--throughput-runs", &options.throughput_runs)
      .Count("--throughput-mib", &options.throughput_mib)
      .Text("--supervisor", &options.supervisor, /*allow_empty=*/true)
      .Text("--zygo", &options.zygo, /*allow_empty=*/true);
  if (absl::Status parsed = flags.Parse(argc, argv, &options.help); !parsed.ok()) return parsed;
  return options;
}

#ifdef __OPTIMIZE__
constexpr char kBuild[] = "optimised build";
#else
constexpr char kBuild[] =
    "UNOPTIMISED build: use `bazel build -c opt //cli:zygo` for numbers to publish";
#endif

int Fail(const absl::Status& status) {
  fflush(stdout);
  fprintf(stderr, "zygo bench net: %s\n", std::string(status.message()).c_str());
  return 125;
}

absl::Status CheckPrerequisites() {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError("needs root (it makes network namespaces and veth)");
  }
  for (const char* tool : {"/usr/bin/pasta", "/usr/bin/python3", "/usr/bin/setpriv",
                           "/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"}) {
    if (access(tool, X_OK) != 0) return base::ErrnoStatus(errno, absl::StrCat("needs ", tool));
  }
  return absl::OkStatus();
}

struct Setup {
  NetOptions options;
  std::string zygo;
  std::vector<std::string> env;  // the caller's, plus ZYGO_DNS_UPSTREAM
  const FakeInternet* net = nullptr;
};

// Egress allows kBenchName on `port` only.
std::vector<std::string> ZygoRun(const Setup& s, const std::string& mode,
                                 const std::vector<std::string>& command, int port = kServerPort) {
  std::vector<std::string> argv = {s.zygo, "run", "--net", mode};
  if (mode == "egress") {
    argv.insert(argv.end(), {"--allow", absl::StrCat(kBenchName, ":", port)});
  }
  argv.push_back("host");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// Part 1: `zygo run --net MODE host /bin/true`, timed from spawn to reap.
absl::StatusOr<std::vector<MeasuredCase>> MeasureOneShot(const Setup& s) {
  std::vector<InterleavedCase> cases;
  for (const char* mode : {"none", "full", "egress"}) {
    Command command = OnMachine(*s.net, ZygoRun(s, mode, {"/bin/true"}), s.env);
    cases.push_back({"/bin/true",
                     absl::StrCat("--net ", mode),
                     {{"zygo run", command, CommandLine(command)}},
                     nullptr,
                     nullptr});
  }
  InterleavedOptions options;
  options.runs = s.options.runs;
  options.warmup = s.options.warmup;
  return MeasureInterleaved(cases, options);
}

struct ProbeCase {
  std::string where;  // "machine", "sandbox --net full", ...
  std::vector<std::string> argv;
};

// "key ms" lines from the measuring script.
absl::StatusOr<std::map<std::string, double>> ParseTimes(const std::string& out) {
  std::map<std::string, double> times;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    double ms = 0;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[1], &ms)) {
      return absl::InternalError(absl::StrCat("unexpected output line '", line, "'"));
    }
    times[parts[0]] = ms;
  }
  return times;
}

std::vector<std::string> Script(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/python3", "-c", kMeasureScript};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Part 2: connect (and for egress resolve) times measured by python itself, in rounds
// that rotate the order as MeasureInterleaved does. Samples are keyed "where: key".
absl::StatusOr<std::map<std::string, std::vector<double>>> MeasureConnect(const Setup& s) {
  const std::string port = absl::StrCat(kServerPort);
  const std::vector<ProbeCase> cases = {
      {"machine", Script({"connect", kServerAddress, port})},
      {"machine", Script({"query", DnsUpstream(), kBenchName})},
      {"sandbox --net full", ZygoRun(s, "full", Script({"connect", kServerAddress, port}))},
      {"sandbox --net egress", ZygoRun(s, "egress", Script({"resolve", kBenchName, port}))},
  };
  std::map<std::string, std::vector<double>> samples;
  const int rounds = s.options.warmup + s.options.runs;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < cases.size(); ++k) {
      const ProbeCase& c = cases[(k + round) % cases.size()];
      Command command = OnMachine(*s.net, c.argv, s.env);
      absl::StatusOr<std::string> out = CaptureStdout(command);
      if (!out.ok()) {
        return absl::InternalError(
            absl::StrCat(out.status().message(), "\n  command: ", CommandLine(command)));
      }
      ZYGO_ASSIGN_OR_RETURN(auto times, ParseTimes(*out));
      if (round < s.options.warmup) continue;
      for (const auto& [key, ms] : times) samples[absl::StrCat(c.where, ": ", key)].push_back(ms);
      if (times.count("resolve_ms") && times.count("connect_ms")) {
        samples[absl::StrCat(c.where, ": answer_to_usable_ms")].push_back(times["resolve_ms"] +
                                                                          times["connect_ms"]);
      }
    }
  }
  return samples;
}

// Part 3: one TCP connection's bytes per second from the source, the machine directly
// against full (to the address: full mode's DNS is not what this measures) and egress
// (to the name, through zygo's resolver).
absl::StatusOr<std::vector<StreamSamples>> MeasureThroughput(const Setup& s) {
  const std::string port = absl::StrCat(kSourcePort);
  const std::string bytes = absl::StrCat(int64_t{s.options.throughput_mib} << 20);
  const std::vector<std::pair<std::string, std::vector<std::string>>> paths = {
      {"machine directly", Script({"stream", kServerAddress, port, bytes})},
      {"sandbox --net full", ZygoRun(s, "full", Script({"stream", kServerAddress, port, bytes}))},
      {"sandbox --net egress",
       ZygoRun(s, "egress", Script({"stream", kBenchName, port, bytes}), kSourcePort)},
  };
  std::vector<StreamPath> streams;
  for (const auto& [label, argv] : paths)
    streams.push_back({label, OnMachine(*s.net, argv, s.env)});
  return MeasureStreams(streams, s.options.throughput_runs, s.options.warmup,
                        int64_t{s.options.throughput_mib} << 20);
}

std::string Row(const std::string& label, const Summary& summary, const std::string& extra) {
  return absl::StrFormat("%-52s %5d %9.2f %9.2f %s\n", label, summary.count, summary.p50,
                         summary.p99, extra);
}

void PrintOneShot(const std::vector<MeasuredCase>& measured) {
  printf("\none-shot `zygo run --net MODE host /bin/true`, spawn to reap, ms\n");
  printf("%-52s %5s %9s %9s %s\n", "mode", "runs", "p50", "p99", "added p50 over none");
  const double none_p50 = measured.front().result.summary.p50;
  for (const MeasuredCase& m : measured) {
    const Summary& summary = m.result.summary;
    std::string extra = m.result.variant == "--net none"
                            ? "-"
                            : absl::StrFormat("%+.2f ms", summary.p50 - none_p50);
    printf("%s", Row(m.result.variant, summary, extra).c_str());
  }
}

absl::Status PrintConnect(const std::map<std::string, std::vector<double>>& samples) {
  printf("\nto the allowed server %s:%d (%s), measured inside python with time.perf_counter, ms\n",
         kServerAddress, kServerPort, kBenchName);
  printf("%-52s %5s %9s %9s\n", "path: what", "runs", "p50", "p99");
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"machine: connect_ms", "machine directly: TCP connect"},
      {"sandbox --net full: connect_ms", "sandbox --net full: TCP connect"},
      {"sandbox --net egress: connect_ms", "sandbox --net egress: first TCP connect"},
      {"machine: answer_ms", "machine directly: DNS query to the upstream"},
      {"sandbox --net egress: resolve_ms", "sandbox --net egress: resolve via zygo's resolver"},
      {"sandbox --net egress: answer_to_usable_ms", "sandbox --net egress: DNS answer to usable"},
  };
  for (const auto& [key, label] : rows) {
    auto it = samples.find(key);
    if (it == samples.end()) return absl::InternalError(absl::StrCat("no samples for ", key));
    ZYGO_ASSIGN_OR_RETURN(Summary summary, Summarize(it->second));
    printf("%s", Row(label, summary, "").c_str());
  }
  return absl::OkStatus();
}

absl::Status Measure(Setup& s) {
  ZYGO_ASSIGN_OR_RETURN(std::string supervisor_binary, FindSupervisorBinary(s.options.supervisor));
  printf("supervisor: %s\n", supervisor_binary.c_str());
  ZYGO_ASSIGN_OR_RETURN(std::unique_ptr<FakeInternet> net, FakeInternet::Start());
  s.net = net.get();
  printf(
      "fake internet: machine netns (zygo and the supervisor run here) --veth 203.0.113.2/.1-- "
      "internet netns: DNS %s answering %s -> %s, TCP accept server on %s:%d, byte source on "
      ":%d; ZYGO_DNS_UPSTREAM=%s\n",
      DnsUpstream().c_str(), kBenchName, kServerAddress, kServerAddress, kServerPort, kSourcePort,
      DnsUpstream().c_str());
  printf(
      "runs: %d of each one-shot and connect case, %d streams of %d MiB per path, %d warm "
      "rounds per mode; each part after %d warm-up round(s), interleaved\n",
      s.options.runs, s.options.throughput_runs, s.options.throughput_mib, s.options.warm_rounds,
      s.options.warmup);
  fflush(stdout);
  // The supervisor starts last (an idle one would still be beside the one-shot runs);
  // its CPU is the helpers' in the other-work line.
  std::optional<SupervisorSession> session;
  OtherWork other([&session]() -> std::optional<double> {
    return session.has_value() ? HelpersCpu(session->process->pid(), 0) : 0.0;
  });
  ZYGO_ASSIGN_OR_RETURN(std::vector<MeasuredCase> one_shot, MeasureOneShot(s));
  ZYGO_ASSIGN_OR_RETURN(auto samples, MeasureConnect(s));
  ZYGO_ASSIGN_OR_RETURN(std::vector<StreamSamples> streams, MeasureThroughput(s));
  ZYGO_ASSIGN_OR_RETURN(SupervisorSession started, StartNetSupervisor(*net, supervisor_binary));
  session = std::move(started);
  absl::StatusOr<NetWarmSamples> warm =
      MeasureNetWarm(*session, s.options.warm_rounds, s.options.warmup);
  if (!warm.ok()) {
    return absl::Status(
        warm.status().code(),
        absl::StrCat(warm.status().message(), "\nsupervisor log:\n", session->process->LogTail()));
  }
  PrintOneShot(one_shot);
  ZYGO_RETURN_IF_ERROR(PrintConnect(samples));
  ZYGO_RETURN_IF_ERROR(PrintStreams(
      streams, absl::StrFormat("throughput: %d MiB over one TCP connection from the source "
                               "%s:%d (%s), timed inside python from the request to the last "
                               "byte",
                               s.options.throughput_mib, kServerAddress, kSourcePort, kBenchName)));
  ZYGO_RETURN_IF_ERROR(PrintNetWarm(*warm));
  printf("the supervisor ran in %s, removed when the bench ends\n",
         session->process->dir().c_str());
  printf(
      "\nnote: pasta's start dominates --net full and --net egress (about 60 ms alone on these "
      "machines); egress adds its nftables filter and resolver helper. Every run spawns zygo "
      "through nsenter --net, which the none row pays too. \"DNS answer to usable\" = resolve "
      "(getaddrinfo through zygo's resolver, which puts the address in the nftables set "
      "before answering) + the first connect. A warm function pays pasta (and egress its "
      "filter and resolver) once, when it warms: the warm-up rows; its requests then pay only "
      "the connect. The supervisor's timer runs from its zygote's start to the agent's hello, "
      "read from its log line (the API reports no warm time).\n");
  printf("%s\n", other.Line(ProbeHost("/usr/bin/bwrap").nproc).c_str());
  fflush(stdout);
  return session->process->Stop();
}

}  // namespace

int RunNetBench(int argc, char** argv) {
  absl::StatusOr<NetOptions> parsed = ParseFlags(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (absl::Status ok = CheckPrerequisites(); !ok.ok()) return Fail(ok);
  Setup s;
  s.options = *parsed;
  // Resolved here: nsenter runs it from another mount namespace.
  absl::StatusOr<std::string> zygo = MeasuredZygo(s.options.zygo);
  if (!zygo.ok()) return Fail(zygo.status());
  s.zygo = *zygo;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (strncmp(*entry, "ZYGO_DNS_UPSTREAM=", 18) != 0) s.env.push_back(*entry);
  }
  s.env.push_back(absl::StrCat("ZYGO_DNS_UPSTREAM=", DnsUpstream()));
  HostInfo host = ProbeHost("/usr/bin/bwrap");
  printf("%s\n", HostLine(host).c_str());
  if (HostWasBusy(host)) {
    printf("note: the host was busy before the bench (load %.2f on %d CPUs)\n", host.load[0],
           host.nproc);
  }
  printf("zygo: %s (%s)\n", s.zygo.c_str(), kBuild);
  fflush(stdout);
  absl::Status done = Measure(s);
  if (!done.ok()) return Fail(done);
  return 0;
}

}  // namespace zygo::bench
