#include "bench/common/timed_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "core/base/sys/wait_status.h"
#include "core/base/unique_fd.h"

extern char** environ;

namespace zygo::bench {
namespace {

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// posix_spawn's attribute and file-action objects, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // stdin on /dev/null, stdout on `out_fd` (or /dev/null), stderr on /dev/null, the
  // working directory, and default signal handling in the child.
  absl::Status Prepare(int null_fd, int out_fd, const std::string& workdir) {
    int err = posix_spawn_file_actions_adddup2(&actions_, null_fd, 0);
    if (err == 0) err = posix_spawn_file_actions_adddup2(&actions_, out_fd, 1);
    if (err == 0) err = posix_spawn_file_actions_adddup2(&actions_, null_fd, 2);
    if (err == 0 && !workdir.empty()) {
      err = posix_spawn_file_actions_addchdir_np(&actions_, workdir.c_str());
    }
    if (err != 0) return base::ErrnoStatus(err, "posix_spawn_file_actions");
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr_, &none);
    return absl::OkStatus();
  }
  const posix_spawn_file_actions_t* actions() const { return &actions_; }
  const posix_spawnattr_t* attr() const { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

absl::StatusOr<base::UniqueFd> OpenDevNull() {
  base::UniqueFd fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return base::ErrnoStatus(errno, "open(/dev/null, O_RDWR)");
  return fd;
}

absl::StatusOr<pid_t> Spawn(const Command& command, int null_fd, int out_fd) {
  if (command.argv.empty()) return absl::InvalidArgumentError("empty command");
  SpawnSetup setup;
  ZYGO_RETURN_IF_ERROR(setup.Prepare(null_fd, out_fd, command.workdir));
  std::vector<char*> argv = CStrings(command.argv);
  std::vector<char*> env = CStrings(command.env);
  pid_t pid = -1;
  int err = posix_spawn(&pid, argv[0], setup.actions(), setup.attr(), argv.data(),
                        command.inherit_env ? environ : env.data());
  if (err != 0) return base::ErrnoStatus(err, absl::StrCat("posix_spawn(", argv[0], ")"));
  return pid;
}

absl::StatusOr<int> Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoStatus(errno, absl::StrCat("waitpid(", pid, ")"));
  }
  return status;
}

// Waits up to `deadline_ms` for `pid` to exit, through a pidfd so the wait wakes the
// moment it exits (no polling interval lands in the measurement).
absl::Status AwaitExit(pid_t pid, int deadline_ms) {
  int pidfd = base::sys::RawPidfdOpen(pid);
  if (pidfd < 0) return base::ErrnoStatus(-pidfd, absl::StrCat("pidfd_open(", pid, ")"));
  base::UniqueFd owned(pidfd);
  struct pollfd pfd = {pidfd, POLLIN, 0};
  double give_up = NowMs() + deadline_ms;
  for (;;) {
    int left = static_cast<int>(give_up - NowMs());
    if (left <= 0) break;
    int n = poll(&pfd, 1, left);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) return base::ErrnoStatus(errno, "poll(pidfd)");
  }
  kill(pid, SIGKILL);
  (void)Reap(pid);
  return absl::DeadlineExceededError(
      absl::StrCat("still running after ", deadline_ms, " ms; killed it"));
}

}  // namespace

std::string CommandLine(const Command& command) {
  std::string line;
  for (const std::string& arg : command.argv) {
    if (!line.empty()) line += ' ';
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    line += plain ? arg : absl::StrCat("'", arg, "'");
  }
  return line;
}

absl::StatusOr<TimedRun> RunTimed(const Command& command, int deadline_ms) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd null_fd, OpenDevNull());
  double start = NowMs();
  ZYGO_ASSIGN_OR_RETURN(pid_t pid, Spawn(command, null_fd.get(), null_fd.get()));
  ZYGO_RETURN_IF_ERROR(AwaitExit(pid, deadline_ms));
  ZYGO_ASSIGN_OR_RETURN(int status, Reap(pid));
  return TimedRun{status, NowMs() - start};
}

absl::StatusOr<CapturedRun> RunCaptured(const Command& command, int deadline_ms) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd null_fd, OpenDevNull());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2");
  base::UniqueFd read_end(fds[0]);
  base::UniqueFd write_end(fds[1]);
  const double give_up = NowMs() + deadline_ms;
  ZYGO_ASSIGN_OR_RETURN(pid_t pid, Spawn(command, null_fd.get(), write_end.get()));
  write_end.Reset();
  CapturedRun run;
  struct pollfd pfd = {read_end.get(), POLLIN, 0};
  char buffer[4096];
  for (;;) {
    const int left = static_cast<int>(give_up - NowMs());
    if (left <= 0) break;  // AwaitExit below kills it
    const int ready = poll(&pfd, 1, left);
    if (ready < 0 && errno != EINTR) return base::ErrnoStatus(errno, "poll(stdout pipe)");
    if (ready <= 0) continue;
    ssize_t n = read(read_end.get(), buffer, sizeof(buffer));
    if (n > 0) {
      run.out.append(buffer, n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ZYGO_RETURN_IF_ERROR(AwaitExit(pid, std::max(1, static_cast<int>(give_up - NowMs()))));
  struct rusage usage = {};
  while (wait4(pid, &run.wait_status, 0, &usage) < 0) {
    if (errno != EINTR) return base::ErrnoStatus(errno, absl::StrCat("wait4(", pid, ")"));
  }
  run.cpu_seconds = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                    (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return run;
}

absl::StatusOr<std::string> CaptureStdout(const Command& command) {
  constexpr int kDeadlineMs = 10 * 60'000;  // a version query; only a hung tool takes long
  ZYGO_ASSIGN_OR_RETURN(CapturedRun run, RunCaptured(command, kDeadlineMs));
  if (!WIFEXITED(run.wait_status) || WEXITSTATUS(run.wait_status) != 0) {
    return absl::InternalError(
        absl::StrCat(CommandLine(command), ": ", base::sys::DescribeWaitStatus(run.wait_status)));
  }
  return std::move(run.out);
}

}  // namespace zygo::bench
