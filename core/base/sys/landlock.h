// Landlock syscalls. Async-signal-safe; each returns a value >= 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_LANDLOCK_H_
#define ZYGO_CORE_BASE_SYS_LANDLOCK_H_

#include <errno.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::base::sys {

// The ABI version the running kernel supports, or -errno (EOPNOTSUPP when disabled).
inline int RawLandlockAbiVersion() {
  int rc = static_cast<int>(
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION));
  return rc < 0 ? -errno : rc;
}

// `attr` points at a struct landlock_ruleset_attr of `size` bytes: newer ABIs append
// fields (net in v4, scoped in v6), and the kernel takes the size it is given.
inline int RawLandlockCreateRuleset(const void* attr, size_t size) {
  int rc = static_cast<int>(::syscall(SYS_landlock_create_ruleset, attr, size, 0));
  return rc < 0 ? -errno : rc;
}

inline int RawLandlockAddPathRule(int ruleset_fd, int parent_fd, unsigned long long access) {
  struct landlock_path_beneath_attr rule = {};
  rule.allowed_access = access;
  rule.parent_fd = parent_fd;
  int rc = static_cast<int>(
      ::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
  return rc < 0 ? -errno : 0;
}

inline int RawLandlockRestrictSelf(int ruleset_fd) {
  int rc = static_cast<int>(::syscall(SYS_landlock_restrict_self, ruleset_fd, 0));
  return rc < 0 ? -errno : 0;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_LANDLOCK_H_
