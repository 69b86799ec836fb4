#include "core/rlimits.h"

#include <errno.h>

#include <algorithm>
#include <cstddef>

namespace zygo::core {
namespace {

// The wanted limit, lowered to what the caller may grant: without CAP_SYS_RESOURCE in the
// host's user namespace (which a sandbox never has) no process can raise a hard limit, so
// a caller whose hard RLIMIT_NOFILE is 1024 gets 1024:1024, not a failed setrlimit.
Rlimit Clamped(Rlimit wanted) {
  struct rlimit current;
  if (getrlimit(wanted.resource, &current) != 0) return wanted;
  wanted.hard = std::min(wanted.hard, current.rlim_max);
  wanted.soft = std::min(wanted.soft, wanted.hard);
  return wanted;
}

}  // namespace

std::vector<Rlimit> DefaultRlimits() {
  std::vector<Rlimit> limits = {
      {RLIMIT_CORE, "core", 0, 0},  // a core file is a copy of the sandbox's memory
      {RLIMIT_NOFILE, "nofile", 1024, 4096},
      {RLIMIT_MEMLOCK, "memlock", 64 << 10, 64 << 10},
      // Queued signals and POSIX message-queue bytes are counted per user across user
      // namespaces, so what a sandbox queues counts against the host user it maps to (root,
      // when zygo runs as root): a sandbox gets a small share, not the whole budget.
      {RLIMIT_SIGPENDING, "sigpending", 1024, 1024},
      {RLIMIT_MSGQUEUE, "msgqueue", 64 << 10, 64 << 10},
  };
  for (Rlimit& limit : limits) limit = Clamped(limit);
  return limits;
}

ChildFailure ApplyRlimitsInChild(const std::vector<Rlimit>& limits) {
  for (size_t i = 0; i < limits.size(); ++i) {
    struct rlimit value = {limits[i].soft, limits[i].hard};
    if (setrlimit(limits[i].resource, &value) != 0) {
      return {LaunchStep::kRlimits, errno, static_cast<int>(i)};
    }
  }
  return ChildFailure::Ok();
}

}  // namespace zygo::core
