// zygo-agent-node: the Node agent. It holds a function's sandbox open as its zygote and,
// for each spare the supervisor asks for, forks a process that sets itself apart from the
// other requests and starts a Node worker with the handler loaded (node_spare.h); each
// worker serves one request and exits. Before Hello it loads the handler once in a check
// worker, so a handler that cannot load fails the warm-up, not every request. Anything
// that fails before Hello exits 125 with one line on stderr (the load error's stack after).
// Where Node ships no startup snapshot of its own, workers start from one of worker.js built
// here (node_snapshot.h); --snapshot on|off forces the choice (tests).
// Usage: zygo-agent-node [--fd N] [--code-dir DIR] (--entry FILE:FUNCTION | --pool) [--node PATH]
//                        [--snapshot auto|on|off]
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/isolation/isolation.h"
#include "agents/node/node_snapshot.h"
#include "agents/node/node_spare.h"
#include "agents/node/node_worker.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "agents/zygote/zygote.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::node {
namespace {

constexpr int kStartupFailed = 125;
constexpr char kUsage[] =
    "usage: zygo-agent-node [--fd N] [--code-dir DIR] (--entry FILE:FUNCTION | --pool) "
    "[--node PATH] [--snapshot auto|on|off]";
// Room left in a Done frame's payload for the result after its other fields.
constexpr size_t kMaxResultSize = wire::kMaxPayloadSize - 64;

struct Flags {
  int fd = 3;
  std::string entry;
  bool pool = false;
  std::string code_dir = "/code";
  std::string node;  // empty: the first node on PATH
  std::string snapshot = "auto";
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pool") {
      flags.pool = true;
      continue;
    }
    if (i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat(arg, ": missing value; ", kUsage));
    }
    const std::string value = argv[++i];
    if (arg == "--fd") {
      if (!absl::SimpleAtoi(value, &flags.fd) || flags.fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--fd ", value, " is not an fd number"));
      }
    } else if (arg == "--entry") {
      flags.entry = value;
    } else if (arg == "--code-dir") {
      flags.code_dir = value;
    } else if (arg == "--node") {
      flags.node = value;
    } else if (arg == "--snapshot") {
      if (value != "auto" && value != "on" && value != "off") {
        return absl::InvalidArgumentError(
            absl::StrCat("--snapshot ", value, ": use auto, on or off"));
      }
      flags.snapshot = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, "; ", kUsage));
    }
  }
  if (flags.pool == !flags.entry.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("give exactly one of --entry and --pool; ", kUsage));
  }
  if (!flags.pool && flags.entry.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--entry ", flags.entry, " is not FILE:FUNCTION (e.g. handler.js:main)"));
  }
  return flags;
}

// --node, else the first executable `node` on PATH.
absl::StatusOr<std::string> FindNode(const std::string& given) {
  if (!given.empty()) {
    if (::access(given.c_str(), X_OK) == 0) return given;
    return absl::FailedPreconditionError(absl::StrCat("--node ", given, " is not executable"));
  }
  const char* path = ::getenv("PATH");
  const std::string search = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(search, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/node");
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::FailedPreconditionError(absl::StrCat("no node on PATH (", search, ")"));
}

// The handler loaded once in a worker of its own: its error, stack and all, fails the start.
absl::StatusOr<WorkerTraits> CheckHandler(const WorkerCommand& function) {
  WorkerCommand check = function;
  check.mode = WorkerMode::kCheck;
  absl::StatusOr<Worker> worker = Worker::Start(check);
  if (!worker.ok()) return worker.status();
  absl::StatusOr<std::optional<WorkerError>> ready = worker->AwaitReady(STDERR_FILENO);
  const WorkerExit exit = worker->ReapExit();
  if (!ready.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(check.node, " ended before it loaded ",
                     function.entry.empty() ? "anything" : function.entry,
                     exit.signalled ? " (signal " : " (exit status ", exit.code, ")"));
  }
  if (!ready->has_value()) return worker->traits();
  const WorkerError& error = **ready;
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot load ", function.entry, ": ", error.type, ": ", error.message, "\n", error.stack));
}

// Builds worker.js's snapshot where it pays (`policy` auto: Node has no snapshot of its
// own) or where asked (on), for a CommonJS handler or a pool, and checks that a worker
// starts from it; then points `command` at it. Auto falls back to worker.js's source with
// one line on stderr; on fails the start. An invalid fd: no snapshot.
absl::StatusOr<base::UniqueFd> UseSnapshot(const std::string& policy, const WorkerTraits& traits,
                                           WorkerCommand& command) {
  const bool forced = policy == "on";
  if (policy == "off" || (!forced && traits.builtin_snapshot)) return base::UniqueFd();
  if (traits.esm) {
    // A worker from a snapshot cannot import() the handler.
    if (forced) std::fprintf(stderr, "zygo-agent-node: no snapshot for an ES module handler\n");
    return base::UniqueFd();
  }
  const char* tmp = ::getenv("TMPDIR");
  absl::StatusOr<base::UniqueFd> blob =
      BuildWorkerSnapshot(command.node, tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  absl::Status usable = blob.status();
  if (blob.ok()) {
    WorkerCommand trial = command;
    trial.code_fd = blob->get();
    trial.snapshot = true;
    absl::StatusOr<WorkerTraits> started = CheckHandler(trial);
    usable = started.status();
  }
  if (!usable.ok()) {
    if (forced) return usable;
    std::fprintf(stderr, "zygo-agent-node: workers start without a snapshot: %s\n",
                 std::string(usable.message()).c_str());
    return base::UniqueFd();
  }
  command.code_fd = blob->get();
  command.snapshot = true;
  std::fprintf(stderr, "zygo-agent-node: workers start from a snapshot of their code (%s)\n",
               forced ? "--snapshot on" : "this node has no startup snapshot of its own");
  return blob;
}

// Everything up to and including Hello; the zygote loop then owns the process.
absl::Status Serve(const Flags& flags) {
  if (absl::Status status = zygote::BlockChildSignal(); !status.ok()) return status;
  absl::StatusOr<std::string> node = FindNode(flags.node);
  if (!node.ok()) return node.status();
  // Alive as long as the zygote, as the snapshot below: every worker starts from one.
  absl::StatusOr<base::UniqueFd> source = WorkerSource();
  if (!source.ok()) return source.status();
  WorkerCommand command{*node,          flags.pool ? WorkerMode::kPool : WorkerMode::kFunction,
                        flags.code_dir, flags.entry,
                        kMaxResultSize, source->get()};
  absl::StatusOr<WorkerTraits> traits = CheckHandler(command);
  if (!traits.ok()) return traits.status();
  absl::StatusOr<base::UniqueFd> snapshot = UseSnapshot(flags.snapshot, *traits, command);
  if (!snapshot.ok()) return snapshot.status();
  // Listed once here; every spare stacks its own domain from these fds (isolation.h).
  NodeSpareRunner runner(command, isolation::PrepareLandlockBase());
  if (absl::Status hello = zygote::SendHello(flags.fd, "node"); !hello.ok()) {
    if (wire::IsPeerClosed(hello)) ::_exit(0);  // dropped before it was ready
    return hello;
  }
  if (absl::Status served = zygote::RunZygote(flags.fd, runner); !served.ok()) {
    std::fprintf(stderr, "zygo-agent-node: zygote: %s\n", served.ToString().c_str());
    ::_exit(1);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace zygo::agents::node

int main(int argc, char** argv) {
  using zygo::agents::node::kStartupFailed;
  absl::StatusOr<zygo::agents::node::Flags> flags = zygo::agents::node::ParseFlags(argc, argv);
  absl::Status status = flags.ok() ? zygo::agents::node::Serve(*flags) : flags.status();
  if (!status.ok()) {
    std::fprintf(stderr, "zygo-agent-node: %s\n", std::string(status.message()).c_str());
    return kStartupFailed;
  }
  return 0;
}
