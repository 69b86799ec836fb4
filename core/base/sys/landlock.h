// Landlock syscalls. Async-signal-safe; each returns a value >= 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_LANDLOCK_H_
#define ZYGO_CORE_BASE_SYS_LANDLOCK_H_

#include <errno.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace zygo::base::sys {

// Debian 12's kernel headers stop at ABI 2; later bits are spelled out here
// (Documentation/userspace-api/landlock.rst).
inline constexpr uint64_t kLandlockFsTruncate = 1ULL << 14;              // ABI 3
inline constexpr uint64_t kLandlockFsIoctlDev = 1ULL << 15;              // ABI 5
inline constexpr uint64_t kLandlockScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
inline constexpr uint64_t kLandlockScopeSignal = 1ULL << 1;              // ABI 6

// struct landlock_ruleset_attr as of ABI 6; the kernel reads the prefix its size covers.
struct LandlockRulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

inline constexpr uint64_t kLandlockReadExecute =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;

// The filesystem rights a ruleset for `abi` can handle.
inline uint64_t LandlockHandledFs(int abi) {
  uint64_t handled = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) handled |= kLandlockFsTruncate;
  if (abi >= 5) handled |= kLandlockFsIoctlDev;
  return handled;
}

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
