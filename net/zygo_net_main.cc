// zygo-net --check-firewall PID: for zygo doctor, the firewall step alone (it writes
// "ready" or "error: ..." and exits).
//
// zygo-net PID ARG...: the network of one --net egress/full sandbox, run by `zygo run`
// between clone and the sandbox's "go" (net/network_helper.h). It installs the firewall,
// starts pasta and the resolver (net/sandbox_network.h), writes "ready" to stdout, and
// then serves until its stdin reaches EOF — `zygo run` closed it, or died — and stops
// them all. A failure is one "error: ..." line on stdout and exit 125.
//
// A separate, dynamically linked binary: libuv, c-ares and libmnl have no static builds
// here, and `zygo` stays static so the default (--net none) run loads no shared library.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "net/sandbox_network.h"
#include "net/sandbox_network_plan.h"

namespace {

int Fail(const std::string& message) {
  printf("error: %s\n", message.c_str());
  fflush(stdout);
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  int pid = 0;
  if (argc == 3 && std::string(argv[1]) == "--check-firewall") {
    if (!absl::SimpleAtoi(argv[2], &pid) || pid <= 1)
      return Fail("usage: zygo-net --check-firewall PID");
    absl::Status checked =
        zygo::net::SandboxNetwork::CheckFirewallFromParent(static_cast<pid_t>(pid));
    if (!checked.ok()) return Fail(std::string(checked.message()));
    printf("ready\n");
    return 0;
  }
  if (argc < 2 || !absl::SimpleAtoi(argv[1], &pid) || pid <= 1) {
    return Fail(
        "usage: zygo-net PID --mode=egress|full --pasta=PATH --upstream=S... [--allow=E]...");
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  absl::StatusOr<zygo::net::SandboxNetworkPlan> plan = zygo::net::SandboxNetworkPlanFromArgs(args);
  if (!plan.ok()) return Fail(std::string(plan.status().message()));
  absl::StatusOr<std::unique_ptr<zygo::net::SandboxNetwork>> network =
      zygo::net::SandboxNetwork::StartFromParent(static_cast<pid_t>(pid), *plan, [](pid_t pasta) {
        // zygo keeps a pidfd of pasta: pasta daemonizes, so if this helper were killed
        // nothing else would stop it.
        printf("pasta=%d\n", static_cast<int>(pasta));
        fflush(stdout);
      });
  if (!network.ok()) return Fail(std::string(network.status().message()));
  printf("ready\n");
  fflush(stdout);
  char byte;
  for (;;) {
    ssize_t n = read(STDIN_FILENO, &byte, 1);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;
  }
  (*network)->Stop();
  return 0;
}
