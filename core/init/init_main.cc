// zygo-init: the sandbox's pid 1 once its setup is done. The setup child (a copy of the
// zygo process that cloned it, with the caller's memory and environment) execs this
// small program from an exec-only memfd as its last step, so no byte of zygo's or the
// supervisor's memory stays in the sandbox, and the kernel makes the init non-dumpable
// from its first instruction: nothing in the sandbox can read its memory, environment
// or fds through /proc/1 (see core/init_binary.h). It starts the command, answers the
// seccomp filter's notifications, forwards signals, reaps orphans, and reports the
// command's status to Launch over the report pipe.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/child_report.h"
#include "core/init/command.h"
#include "core/init/init_layout.h"
#include "core/init/seccomp_listener.h"

namespace zygo::core::init {
namespace {

using base::ChildRecordKind;

// The signals forwarded to the command, and SIGCHLD.
sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

struct InitArgs {
  CommandArgs command;
  const char* candidates[kMaxCandidates + 1];
  int report_fd = -1;
  int listener_fd = -1;
};

bool ParseCount(const char* text, long low, long high, long* value) {
  char* end = nullptr;
  *value = strtol(text, &end, 10);
  return end != text && *end == '\0' && *value >= low && *value <= high;
}

// Reads the layout init_layout.h describes; false if argv does not follow it.
bool ParseArgs(int argc, char** argv, char** envp, InitArgs* args) {
  long inherited, candidates;
  if (argc <= kArgFirstCandidate ||
      !ParseCount(argv[kArgInheritedCount], 0, kMaxInheritedFds, &inherited) ||
      !ParseCount(argv[kArgCandidateCount], 1, kMaxCandidates, &candidates) ||
      kArgFirstCandidate + candidates >= argc) {
    return false;
  }
  for (long i = 0; i < candidates; ++i) args->candidates[i] = argv[kArgFirstCandidate + i];
  args->candidates[candidates] = nullptr;
  args->command.inherited = static_cast<int>(inherited);
  args->command.candidates = args->candidates;
  args->command.argv = argv + kArgFirstCandidate + candidates;
  args->command.envp = envp;
  args->report_fd = ReportFd(args->command.inherited);
  const int listener = ListenerFd(args->command.inherited);
  args->listener_fd = fcntl(listener, F_GETFD) >= 0 ? listener : -1;
  return true;
}

[[noreturn]] void Supervise(pid_t command, int signal_fd, SeccompListener& seccomp, int report_fd) {
  for (;;) {
    // A negative fd (no listener) is skipped by poll.
    struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {seccomp.fd(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents & POLLIN) seccomp.HandleOne();
    if (!(fds[0].revents & POLLIN)) continue;
    struct signalfd_siginfo info;
    bool child_exited = false;
    while (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGCHLD) {
        child_exited = true;
      } else {
        kill(command, static_cast<int>(info.ssi_signo));
      }
    }
    if (!child_exited) continue;
    int status;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, nullptr)) > 0) {
      if (pid != command) continue;  // an orphan the command left us
      seccomp.ReportDenials();
      base::WriteChildRecord(report_fd, ChildRecordKind::kExited, 0, 0, status);
      // pid 1's exit ends every process left in the pid namespace.
      _exit(0);
    }
  }
}

int Main(int argc, char** argv, char** envp) {
  // The exec-only file already made this process non-dumpable; say so explicitly as well,
  // first, in case a host's fs.suid_dumpable or an LSM sees it otherwise.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  InitArgs args;
  if (!ParseArgs(argc, argv, envp, &args)) return 125;  // a Launch bug: no report fd known
  sigset_t handled = HandledSignals();
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  int signal_fd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) {
    base::FailChildStep(args.report_fd, static_cast<int>(InitStep::kInitSignals), errno);
  }
  pid_t command = StartCommand(args.command, args.report_fd);
  // The command alone holds its stdio and inherited fds: a copy here would hide its exit
  // from their peers (the supervisor reads the agent's channel until EOF).
  for (int fd = 0; fd < kFirstInheritedFd + args.command.inherited; ++fd) close(fd);
  SeccompListener seccomp(args.listener_fd, args.report_fd);
  Supervise(command, signal_fd, seccomp, args.report_fd);
}

}  // namespace
}  // namespace zygo::core::init

// Called by _start (freestanding.cc): zygo-init has no C library, so no main.
extern "C" int ZygoInitMain(int argc, char** argv, char** envp) {
  return zygo::core::init::Main(argc, argv, envp);
}
