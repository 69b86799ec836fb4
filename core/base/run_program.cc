#include "core/base/run_program.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/unique_fd.h"

extern char** environ;

namespace zygo::base {

bool ProgramRun::exited_zero() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

absl::StatusOr<ProgramRun> RunProgram(const std::vector<std::string>& argv, bool with_stderr,
                                      size_t limit) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProgram: no program");
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  if (with_stderr) {
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  write_end.Reset();
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("posix_spawn(", argv[0], "): ", strerror(rc)));
  }
  ProgramRun run;
  char buffer[512];
  for (;;) {
    const ssize_t n = read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // Read to the end even past the limit, so that the program never blocks on a full pipe.
    if (run.output.size() < limit) {
      run.output.append(buffer, std::min(static_cast<size_t>(n), limit - run.output.size()));
    }
  }
  while (waitpid(pid, &run.wait_status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

}  // namespace zygo::base
