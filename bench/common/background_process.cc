// fork/exec of a bench's helper processes, so the child can ask for a parent-death signal
// (posix_spawn cannot), and their orderly stop.
#include "bench/common/background_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

extern char** environ;

namespace zygo::bench {
namespace {

// Between fork and exec: only async-signal-safe calls, and no allocation (everything
// was prepared by the parent). On failure the child exits 127; the log says nothing, but
// StillRunning() then reports the exit at once.
[[noreturn]] void ExecChild(char* const* argv, int null_fd, int log_fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The parent may have died between fork and prctl; then nobody would send the signal.
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) _exit(127);
  execve(argv[0], argv, environ);
  _exit(127);
}

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

}  // namespace

absl::StatusOr<pid_t> StartBackground(const std::vector<std::string>& argv,
                                      const std::string& log_path) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError("StartBackground needs an absolute argv[0]");
  }
  base::UniqueFd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd.valid()) return base::ErrnoStatus(errno, "open(/dev/null)");
  base::UniqueFd log_fd(open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log_fd.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", log_path, ")"));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return base::ErrnoStatus(errno, "fork()");
  if (pid == 0) ExecChild(args.data(), null_fd.get(), log_fd.get(), parent);
  return pid;
}

bool StillRunning(pid_t pid, int* wait_status) {
  int status = 0;
  pid_t rc;
  do {
    rc = waitpid(pid, &status, WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return true;
  if (wait_status != nullptr) *wait_status = status;
  return false;
}

absl::StatusOr<int> StopBackground(pid_t pid, int grace_ms) {
  int status = 0;
  if (!StillRunning(pid, &status)) return status;
  kill(pid, SIGTERM);
  const double give_up = NowMs() + grace_ms;
  while (NowMs() < give_up) {
    if (!StillRunning(pid, &status)) return status;
    usleep(5'000);
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return absl::DeadlineExceededError(
      absl::StrCat("process ", pid, " did not stop within ", grace_ms, " ms of SIGTERM; killed"));
}

std::string FileTail(const std::string& path, size_t bytes) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  std::string all = text.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace zygo::bench
