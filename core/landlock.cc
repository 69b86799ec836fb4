#include "core/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/base/sys/landlock.h"

namespace zygo::core {
namespace {

constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | base::sys::kLandlockFsTruncate |
                                 base::sys::kLandlockFsIoctlDev;

}  // namespace

LandlockPlan BuildLandlockPlan(int abi, const std::vector<std::string>& writable_paths,
                               bool nested_mounts) {
  LandlockPlan plan;
  plan.abi = abi;
  if (abi <= 0) return plan;
  plan.handled_fs = base::sys::LandlockHandledFs(abi);
  if (abi >= 6)
    plan.scoped = base::sys::kLandlockScopeAbstractUnixSocket | base::sys::kLandlockScopeSignal;
  const uint64_t root_access = nested_mounts ? plan.handled_fs & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR |
                                                                   LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                                                                   base::sys::kLandlockFsIoctlDev)
                                             : base::sys::kLandlockReadExecute;
  plan.rules.push_back({"/", root_access});
  // Device nodes: writing /dev/null (with O_TRUNC, as a shell's `>` does) and terminal
  // ioctls. /dev itself is a read-only tmpfs, so nothing can be created there.
  uint64_t dev_access =
      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  if (abi >= 3) dev_access |= base::sys::kLandlockFsTruncate;
  if (abi >= 5) dev_access |= base::sys::kLandlockFsIoctlDev;
  plan.rules.push_back({"/dev", dev_access});
  for (const std::string& path : writable_paths) {
    plan.rules.push_back({path, plan.handled_fs});
  }
  return plan;
}

ChildFailure ApplyLandlockInChild(const LandlockPlan& plan) {
  if (plan.abi <= 0) return ChildFailure::Ok();
  base::sys::LandlockRulesetAttr attr = {plan.handled_fs, 0, plan.scoped};
  size_t size = plan.abi >= 6 ? sizeof(base::sys::LandlockRulesetAttr) : sizeof(uint64_t);
  int ruleset = base::sys::RawLandlockCreateRuleset(&attr, size);
  if (ruleset < 0) return {LaunchStep::kLandlock, -ruleset, 0};
  for (size_t i = 0; i < plan.rules.size(); ++i) {
    int fd = open(plan.rules[i].path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    int rc = base::sys::RawLandlockAddPathRule(ruleset, fd, plan.rules[i].access);
    if (rc == -EINVAL) {
      // A file (a volume of one file) takes only the file rights.
      rc = base::sys::RawLandlockAddPathRule(ruleset, fd, plan.rules[i].access & kFileRights);
    }
    close(fd);
    if (rc < 0) {
      close(ruleset);
      return {LaunchStep::kLandlock, -rc, static_cast<int>(i + 1)};
    }
  }
  int rc = base::sys::RawLandlockRestrictSelf(ruleset);
  close(ruleset);
  return CheckRc(LaunchStep::kLandlock, rc);
}

}  // namespace zygo::core
