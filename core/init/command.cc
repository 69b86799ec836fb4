#include "core/init/command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "core/base/child_report.h"
#include "core/base/sys/process.h"
#include "core/init/init_layout.h"

namespace zygo::core::init {
namespace {

using base::ChildRecordKind;

void WriteErrno(int fd, int err) {
  while (write(fd, &err, sizeof(err)) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void ExecCommand(const CommandArgs& args, int exec_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Ignored signals survive execve; the command starts with every default.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &default_action, nullptr);
  }
  // Everything past the command's own fds (the report pipe, the seccomp listener, the
  // exec pipe, the init's signalfd) closes at execve; the exec pipe stays until then.
  base::sys::RawCloseRangeCloexec(static_cast<unsigned>(kFirstInheritedFd + args.inherited));
  int err = ENOENT;
  for (const char* const* path = args.candidates; *path != nullptr; ++path) {
    execve(*path, args.argv, args.envp);
    // execvp(3)'s rule: keep looking past ENOENT/ENOTDIR, remember EACCES.
    if (errno == EACCES) {
      err = EACCES;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  WriteErrno(exec_fd, err);
  _exit(127);
}

// Waits for the exec pipe to close (exec worked) or carry an errno (it did not).
// kExecStarted carries the command's pid, so Launch can tell a seccomp kill of the command
// from one of a process it started.
void ReportExec(int exec_read_fd, int report_fd, pid_t command) {
  int err = 0;
  ssize_t n;
  do {
    n = read(exec_read_fd, &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  close(exec_read_fd);
  if (n == sizeof(err)) {
    base::WriteChildRecord(report_fd, ChildRecordKind::kExecFailed, 0, err, 0);
  } else {
    base::WriteChildRecord(report_fd, ChildRecordKind::kExecStarted, 0, 0, command);
  }
}

}  // namespace

pid_t StartCommand(const CommandArgs& args, int report_fd) {
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    base::FailChildStep(report_fd, static_cast<int>(InitStep::kExecPipe), errno);
  }
  pid_t pid = fork();
  if (pid < 0) base::FailChildStep(report_fd, static_cast<int>(InitStep::kForkCommand), errno);
  if (pid == 0) {
    close(exec_pipe[0]);
    ExecCommand(args, exec_pipe[1]);
  }
  close(exec_pipe[1]);
  ReportExec(exec_pipe[0], report_fd, pid);
  return pid;
}

}  // namespace zygo::core::init
