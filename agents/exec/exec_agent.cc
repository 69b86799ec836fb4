// zygo-agent-exec: the warm-exec agent. It holds a function's sandbox open and, for each
// spare the supervisor asks for, forks a process that waits for its request and then
// exec()s the function's command with the request's stdin/stdout/stderr: every request
// is a fresh process of the command, already in its own cgroup when the request arrives.
// Usage: zygo-agent-exec [--fd N] -- COMMAND [ARG...]
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "agents/wire/channel.h"
#include "agents/wire/join.h"
#include "agents/wire/messages.h"

namespace zygo::agents {
namespace {

void SendOrDie(int fd, const absl::StatusOr<wire::Frame>& frame, std::vector<int> fds = {}) {
  absl::Status sent = frame.ok() ? wire::SendFrame(fd, *frame, fds) : frame.status();
  if (sent.ok()) return;
  // The supervisor dropped this zygote: nothing to report to.
  if (wire::IsPeerClosed(sent)) _exit(0);
  fprintf(stderr, "zygo-agent-exec: cannot send to the supervisor on fd %d: %s\n", fd,
          std::string(sent.message()).c_str());
  _exit(125);
}

// The spare: announce itself (the kernel's credentials on this frame tell the supervisor
// its pid), join its request cgroup when asked, wait for the request, then become the
// command.
[[noreturn]] void RunSpare(int zygote_fd, uint64_t spare_id, char** command) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) _exit(125);
  SendOrDie(zygote_fd, wire::Encode(wire::ForkedMessage{spare_id, getpid()}), {pair[1]});
  close(zygote_fd);
  close(pair[1]);
  absl::StatusOr<wire::ReceivedFrame> received;
  for (;;) {
    received = wire::ReceiveFrame(pair[0], absl::InfiniteDuration());
    if (!received.ok()) _exit(0);  // the supervisor dropped this spare
    if (received->frame.type != wire::MessageType::kJoin) break;
    // A failed join is answered with Error; the supervisor then moves this process itself.
    (void)wire::AnswerJoin(pair[0], *received);
  }
  absl::StatusOr<wire::RunMessage> run = wire::DecodeRun(*received);
  if (!run.ok()) _exit(125);
  if (run->fd_layout == wire::FdLayout::kStdio) {
    for (int i = 0; i < 3; ++i) dup2(received->fds[i].get(), i);
  }
  execvp(command[0], command);
  wire::FailedMessage failed;
  failed.request_id = run->request_id;
  failed.error_type = "ExecError";
  failed.message = std::string(command[0]) + ": " + strerror(errno);
  SendOrDie(pair[0], wire::Encode(failed));
  _exit(errno == ENOENT ? 127 : 126);
}

// Reports every reaped spare to the supervisor as Done(spare id, status).
void ReapSpares(int zygote_fd, std::map<pid_t, uint64_t>& spares) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    auto found = spares.find(pid);
    if (found == spares.end()) continue;
    wire::DoneMessage done;
    done.request_id = found->second;
    if (WIFSIGNALED(status)) {
      done.exit_kind = wire::ExitKind::kSignalled;
      done.exit_code = WTERMSIG(status);
    } else {
      done.exit_code = WEXITSTATUS(status);
    }
    spares.erase(found);
    SendOrDie(zygote_fd, wire::Encode(done));
  }
}

int Main(int argc, char** argv) {
  int zygote_fd = 3;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--fd" && i + 1 < argc) {
      zygote_fd = atoi(argv[++i]);
    } else if (arg == "--") {
      ++i;
      break;
    } else {
      fprintf(stderr, "zygo-agent-exec: unknown argument '%s'\n", arg.c_str());
      return 125;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "usage: zygo-agent-exec [--fd N] -- COMMAND [ARG...]\n");
    return 125;
  }
  char** command = argv + i;
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, nullptr);
  int signal_fd = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) return 125;
  wire::HelloMessage hello;
  hello.agent_kind = "exec";
  hello.pid = getpid();
  SendOrDie(zygote_fd, wire::Encode(hello));
  std::map<pid_t, uint64_t> spares;
  for (;;) {
    struct pollfd fds[2] = {{zygote_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return 125;
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
      }
      ReapSpares(zygote_fd, spares);
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(zygote_fd, absl::ZeroDuration());
    if (!received.ok()) {
      if (wire::IsPeerClosed(received.status())) return 0;
      continue;
    }
    if (received->frame.type != wire::MessageType::kSpawn) continue;
    absl::StatusOr<wire::SpawnMessage> spawn = wire::DecodeSpawn(*received);
    if (!spawn.ok()) continue;
    pid_t pid = fork();
    if (pid == 0) {
      close(signal_fd);
      RunSpare(zygote_fd, spawn->spare_id, command);
    }
    if (pid > 0) spares[pid] = spawn->spare_id;
  }
}

}  // namespace
}  // namespace zygo::agents

int main(int argc, char** argv) { return zygo::agents::Main(argc, argv); }
