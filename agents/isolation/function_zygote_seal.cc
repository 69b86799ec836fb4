// A forked function zygote's own seal: cgroup namespace, capabilities, seccomp, Landlock,
// working directory and environment.
#include "agents/isolation/function_zygote_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agents/isolation/isolation.h"
#include "core/base/errno_status.h"
#include "core/base/sys/landlock.h"
#include "core/base/sys/seccomp.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::isolation {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

absl::Status InstallSeccompFilter(const std::string& bytes) {
  // Copied out: a std::string's buffer promises no alignment for struct sock_filter.
  std::vector<struct sock_filter> program(bytes.size() / sizeof(struct sock_filter));
  if (program.empty() || bytes.size() % sizeof(struct sock_filter) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a seccomp filter of ", bytes.size(), " bytes is not whole instructions"));
  }
  ::memcpy(program.data(), bytes.data(), bytes.size());
  const struct sock_fprog fprog = {static_cast<unsigned short>(program.size()), program.data()};
  if (const int rc = base::sys::RawSeccompSetFilter(&fprog); rc < 0) {
    return ErrnoStatus(-rc, "seccomp(SECCOMP_SET_MODE_FILTER, the function's filter)");
  }
  return absl::OkStatus();
}

absl::Status ReplaceEnvironment(const std::vector<std::string>& env) {
  if (::clearenv() != 0) return absl::InternalError("clearenv failed");
  for (const std::string& entry : env) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(absl::StrCat("env entry ", entry, " is not KEY=VALUE"));
    }
    const std::string key = entry.substr(0, equals);
    if (::setenv(key.c_str(), entry.c_str() + equals + 1, 1) != 0) {
      return ErrnoStatus(errno, absl::StrCat("setenv(", key, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> RestrictToFunction() {
  const int abi = LandlockAbi();
  if (abi <= 0) return 0;
  base::sys::LandlockRulesetAttr attr = {
      base::sys::LandlockHandledFs(abi), 0,
      abi >= 6 ? base::sys::kLandlockScopeAbstractUnixSocket | base::sys::kLandlockScopeSignal : 0};
  const int ruleset_fd =
      base::sys::RawLandlockCreateRuleset(&attr, abi >= 6 ? sizeof(attr) : sizeof(uint64_t));
  if (ruleset_fd < 0) return ErrnoStatus(-ruleset_fd, "landlock_create_ruleset");
  UniqueFd ruleset(ruleset_fd);
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return ErrnoStatus(errno, "open(/, O_PATH)");
  const uint64_t access = attr.handled_access_fs &
                          ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                            base::sys::kLandlockFsIoctlDev);
  if (const int rc = base::sys::RawLandlockAddPathRule(ruleset.get(), root.get(), access); rc < 0) {
    return ErrnoStatus(-rc, "landlock_add_rule(/)");
  }
  if (const int rc = base::sys::RawLandlockRestrictSelf(ruleset.get()); rc < 0) {
    return ErrnoStatus(-rc, "landlock_restrict_self");
  }
  return abi;
}

absl::StatusOr<int> SealFunctionZygote(const FunctionZygoteSeal& seal) {
  if (::unshare(CLONE_NEWCGROUP) != 0) return ErrnoStatus(errno, "unshare(CLONE_NEWCGROUP)");
  if (absl::Status dropped = DropAllCapabilities(); !dropped.ok()) return dropped;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus(errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  }
  if (absl::Status filtered = InstallSeccompFilter(seal.seccomp_filter); !filtered.ok()) {
    return filtered;
  }
  absl::StatusOr<int> abi = RestrictToFunction();
  if (!abi.ok()) return abi.status();
  if (::chdir(seal.workdir.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("chdir(", seal.workdir, ")"));
  }
  if (absl::Status replaced = ReplaceEnvironment(seal.env); !replaced.ok()) return replaced;
  return abi;
}

}  // namespace zygo::agents::isolation
