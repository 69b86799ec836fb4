#include "core/userns_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace zygo::core {

namespace {

// A program watches files through one instance per event loop; 16 leave room for a few
// tools at once. Debian's default per user is 128 instances.
constexpr int64_t kInotifyInstances = 16;
constexpr int64_t kInotifyWatches = 8192;

std::vector<UsernsLimit> Limits(int64_t instances, int64_t watches, int64_t user_namespaces) {
  return {
      {"/proc/sys/user/max_inotify_instances", std::to_string(instances)},
      {"/proc/sys/user/max_inotify_watches", std::to_string(watches)},
      {"/proc/sys/user/max_user_namespaces", std::to_string(user_namespaces)},
  };
}

}  // namespace

std::vector<UsernsLimit> DefaultUsernsLimits(int nested_namespaces) {
  // Nested user namespaces: with 0, unshare(CLONE_NEWUSER), which the seccomp allowlist
  // lets through for warm spares, fails with ENOSPC.
  return Limits(kInotifyInstances, kInotifyWatches, nested_namespaces);
}

std::vector<UsernsLimit> RuntimeUsernsLimits(int function_zygotes, int nested_namespaces) {
  const int64_t agents = 1 + static_cast<int64_t>(function_zygotes);
  return Limits(kInotifyInstances * agents, kInotifyWatches * agents,
                static_cast<int64_t>(function_zygotes) * (2 + nested_namespaces));
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
