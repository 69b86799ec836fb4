#include "net/network_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/sys/process.h"

extern char** environ;

namespace zygo::net {
namespace {

using base::UniqueFd;

// pasta alone takes ~60 ms; the firewall a few ms. Far beyond that something is stuck.
constexpr int kReadyTimeoutMs = 20'000;

// Reads the helper's first line, or whatever it wrote before EOF or the timeout.
// Reads the helper's report lines until "ready" or "error: ...", or EOF/timeout (which
// return ""). A "pasta=PID" line on the way opens a pidfd of pasta into `pasta`.
std::string ReadReply(int fd, base::UniqueFd* pasta) {
  std::string text;
  char buffer[512];
  for (;;) {
    size_t newline;
    while ((newline = text.find('\n')) != std::string::npos) {
      std::string line(absl::StripAsciiWhitespace(text.substr(0, newline)));
      text.erase(0, newline + 1);
      absl::string_view rest = line;
      int pid = 0;
      if (absl::ConsumePrefix(&rest, "pasta=") && absl::SimpleAtoi(rest, &pid) && pid > 1) {
        int pidfd = base::sys::RawPidfdOpen(pid);
        if (pidfd >= 0) pasta->Reset(pidfd);
        continue;
      }
      return line;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, kReadyTimeoutMs);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return "";
    text.append(buffer, static_cast<size_t>(got));
  }
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// A running zygo-net: its pid, its stdin (closing it stops it) and its stdout.
struct SpawnedHelper {
  pid_t pid = -1;
  UniqueFd control;
  UniqueFd reply;
};

// Starts zygo-net with `args` (args[0] its path) in a session of its own, stdin and
// stdout/stderr on pipes, signals unblocked and SIGPIPE at its default.
absl::StatusOr<SpawnedHelper> SpawnHelper(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int control[2], reply[2];
  if (pipe2(control, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2(zygo-net stdin)");
  UniqueFd control_read(control[0]), control_write(control[1]);
  if (pipe2(reply, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2(zygo-net stdout)");
  UniqueFd reply_read(reply[0]), reply_write(reply[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, control_read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, reply_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, reply_write.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // zygo blocks the signals it forwards; the helper and pasta must see SIGTERM.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // pasta refuses to start when SIGPIPE is already ignored (it checks signal()'s return).
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF);
  SpawnedHelper spawned;
  int rc = posix_spawn(&spawned.pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return base::ErrnoStatus(rc, absl::StrCat("posix_spawn(", args[0], ")"));
  spawned.control = std::move(control_write);
  spawned.reply = std::move(reply_read);
  return spawned;
}

// The helper's one-line reason from a reply that was not "ready".
absl::Status NotReady(absl::string_view line) {
  absl::string_view why = line;
  absl::ConsumePrefix(&why, "error: ");
  return absl::FailedPreconditionError(
      why.empty() ? std::string("the network helper zygo-net ended before the network was ready")
                  : std::string(why));
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkHelper>> NetworkHelper::Start(
    const std::string& helper_path, pid_t pid, const SandboxNetworkPlan& plan) {
  std::vector<std::string> args = {helper_path, absl::StrCat(pid)};
  for (std::string& arg : SandboxNetworkPlanToArgs(plan)) args.push_back(std::move(arg));
  absl::StatusOr<SpawnedHelper> helper = SpawnHelper(std::move(args));
  if (!helper.ok()) return helper.status();

  base::UniqueFd pasta;
  std::string line = ReadReply(helper->reply.get(), &pasta);
  if (line != "ready") {
    KillAndReap(helper->pid);
    if (pasta.valid()) base::sys::RawPidfdSendSignal(pasta.get(), SIGKILL);
    return NotReady(line);
  }
  return std::unique_ptr<NetworkHelper>(
      new NetworkHelper(helper->pid, std::move(helper->control), std::move(pasta)));
}

absl::Status NetworkHelper::CheckFirewall(const std::string& helper_path, pid_t pid) {
  absl::StatusOr<SpawnedHelper> helper =
      SpawnHelper({helper_path, "--check-firewall", absl::StrCat(pid)});
  if (!helper.ok()) return helper.status();
  base::UniqueFd no_pasta;
  std::string line = ReadReply(helper->reply.get(), &no_pasta);
  // It installs, reports and exits; nothing of it outlives the namespace.
  helper->control.Reset();
  KillAndReap(helper->pid);
  return line == "ready" ? absl::OkStatus() : NotReady(line);
}

NetworkHelper::~NetworkHelper() { Stop(); }

void NetworkHelper::Stop() {
  if (!control_.valid()) return;
  control_.Reset();
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  // zygo-net stops pasta itself; if it died first (killed), pasta is still running.
  if (pasta_.valid()) base::sys::RawPidfdSendSignal(pasta_.get(), SIGKILL);
}

}  // namespace zygo::net
