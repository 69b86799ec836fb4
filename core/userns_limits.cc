#include "core/userns_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace zygo::core {

std::vector<UsernsLimit> DefaultUsernsLimits(int nested_namespaces) {
  // A program watches files through one instance per event loop; 16 leave room for a few
  // tools at once. Debian's default per user is 128 instances. Nested user namespaces:
  // with 0, unshare(CLONE_NEWUSER), which the seccomp allowlist lets through for warm
  // spares, fails with ENOSPC.
  return {
      {"/proc/sys/user/max_inotify_instances", "16"},
      {"/proc/sys/user/max_inotify_watches", "8192"},
      {"/proc/sys/user/max_user_namespaces", std::to_string(nested_namespaces)},
  };
}

ChildFailure ApplyUsernsLimitsInChild(const std::vector<UsernsLimit>& limits) {
  for (size_t i = 0; i < limits.size(); ++i) {
    int fd = open(limits[i].path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return {LaunchStep::kUsernsLimits, errno, static_cast<int>(i)};
    }
    const std::string& value = limits[i].value;
    ssize_t n;
    do {
      n = write(fd, value.data(), value.size());
    } while (n < 0 && errno == EINTR);
    int err = errno;
    close(fd);
    if (n != static_cast<ssize_t>(value.size())) {
      return {LaunchStep::kUsernsLimits, n < 0 ? err : EIO, static_cast<int>(i)};
    }
  }
  return ChildFailure::Ok();
}

}  // namespace zygo::core
