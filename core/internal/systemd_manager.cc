#include "core/internal/systemd_manager.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/helper_binary.h"
#include "core/base/unique_fd.h"
#include "core/internal/cgroup_fs.h"

extern char** environ;

namespace zygo::core::internal {
namespace {

std::string RuntimeDir() {
  const char* dir = getenv("XDG_RUNTIME_DIR");
  if (dir != nullptr && dir[0] == '/') return dir;
  return absl::StrCat("/run/user/", geteuid());
}

// All of `fd` up to `limit` bytes (the helper prints one line at most).
std::string ReadUpTo(int fd, size_t limit) {
  std::string text;
  char buffer[512];
  while (text.size() < limit) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

const char* SystemdManagerName(SystemdManager manager) {
  return manager == SystemdManager::kSystem ? "system" : "user";
}

std::string SystemdPrivateSocket(SystemdManager manager) {
  return manager == SystemdManager::kSystem ? "/run/systemd/private"
                                            : absl::StrCat(RuntimeDir(), "/systemd/private");
}

bool SystemdManagerReachable(SystemdManager manager) {
  if (PathExists(SystemdPrivateSocket(manager))) return true;
  if (manager == SystemdManager::kSystem) {
    return PathExists("/run/dbus/system_bus_socket") ||
           getenv("DBUS_SYSTEM_BUS_ADDRESS") != nullptr;
  }
  return PathExists(absl::StrCat(RuntimeDir(), "/bus")) ||
         getenv("DBUS_SESSION_BUS_ADDRESS") != nullptr;
}

absl::StatusOr<std::string> FindSystemdScopeHelper() {
  return base::FindHelperBinary("zygo-scope", "core",
                                "the helper that asks systemd for a cgroup scope");
}

absl::Status RunSystemdScopeHelper(const std::string& helper, const SystemdScopeRequest& request) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  base::UniqueFd read_end(pipe_fds[0]);
  base::UniqueFd write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  const std::string pid = absl::StrCat(request.pid);
  std::vector<const char*> argv = {
      helper.c_str(),       "--manager",     SystemdManagerName(request.manager), "--unit",
      request.unit.c_str(), "--description", request.description.c_str(),         "--pid",
      pid.c_str(),          nullptr};
  pid_t child = 0;
  const int rc = posix_spawn(&child, helper.c_str(), &actions, nullptr,
                             const_cast<char* const*>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("posix_spawn(", helper, "): ", strerror(rc)));
  }
  write_end.Reset();
  const std::string said(absl::StripAsciiWhitespace(ReadUpTo(read_end.get(), 4096)));
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::UnavailableError(
      said.empty() ? absl::StrCat(helper, " failed (wait status ", status, ")") : said);
}

}  // namespace zygo::core::internal
