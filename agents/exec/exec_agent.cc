// zygo-agent-exec: the warm-exec agent. It holds a function's sandbox open and, for each
// spare the supervisor asks for, forks a process that sets itself apart from the other
// requests (exec_spare.h), waits for its request and then exec()s the function's command
// with the request's stdin/stdout/stderr: every request is a fresh process of the command,
// already in its own cgroup and Landlock domain when the request arrives.
// Usage: zygo-agent-exec [--fd N] -- COMMAND [ARG...]
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agents/exec/exec_spare.h"
#include "agents/isolation/isolation.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "agents/zygote/zygote.h"

namespace zygo::agents::exec {
namespace {

constexpr int kStartupFailed = 125;
constexpr char kUsage[] = "usage: zygo-agent-exec [--fd N] -- COMMAND [ARG...]";

struct Flags {
  int fd = 3;
  char** command = nullptr;  // argv's tail, null-terminated
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg != "--fd" || i + 1 >= argc) {
      return absl::InvalidArgumentError(absl::StrCat("unknown argument '", arg, "'; ", kUsage));
    }
    if (!absl::SimpleAtoi(argv[++i], &flags.fd) || flags.fd < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--fd ", argv[i], " is not an fd number"));
    }
  }
  if (i >= argc) return absl::InvalidArgumentError(kUsage);
  flags.command = argv + i;
  return flags;
}

// Everything up to and including Hello; the zygote loop then owns the process.
absl::Status Serve(const Flags& flags) {
  if (absl::Status status = zygote::BlockChildSignal(); !status.ok()) return status;
  // Listed once here; every spare stacks its own domain from these fds (isolation.h).
  ExecSpareRunner runner(flags.command, isolation::PrepareLandlockBase());
  if (absl::Status hello = zygote::SendHello(flags.fd, "exec"); !hello.ok()) {
    // The supervisor dropped this zygote before it was ready: nothing to report to.
    if (wire::IsPeerClosed(hello)) ::_exit(0);
    return hello;
  }
  if (absl::Status served = zygote::RunZygote(flags.fd, runner); !served.ok()) {
    // After Hello the supervisor has the channel; this line is for the sandbox's log.
    std::fprintf(stderr, "zygo-agent-exec: zygote: %s\n", served.ToString().c_str());
    ::_exit(1);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace zygo::agents::exec

int main(int argc, char** argv) {
  using zygo::agents::exec::kStartupFailed;
  absl::StatusOr<zygo::agents::exec::Flags> flags = zygo::agents::exec::ParseFlags(argc, argv);
  absl::Status status = flags.ok() ? zygo::agents::exec::Serve(*flags) : flags.status();
  if (!status.ok()) {
    std::fprintf(stderr, "zygo-agent-exec: %s\n", std::string(status.message()).c_str());
    return kStartupFailed;
  }
  return 0;
}
