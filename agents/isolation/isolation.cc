// Own namespaces, Landlock domain and parent-death signal for one spare.
#include "agents/isolation/isolation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/capabilities.h"
#include "core/base/sys/landlock.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::isolation {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

absl::Status AddRule(int ruleset, int dir, uint64_t access, const char* path) {
  if (const int rc = base::sys::RawLandlockAddPathRule(ruleset, dir, access); rc < 0) {
    return ErrnoStatus(-rc, absl::StrCat("landlock_add_rule(", path, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EnterOwnNamespaces() {
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return ErrnoStatus(errno, "unshare(CLONE_NEWUSER | CLONE_NEWNS)");
  }
  // The new user namespace gave a full set, bounding set included; none may reach a
  // request (its execve as root would take the bounding set back).
  return DropAllCapabilities();
}

absl::Status DropAllCapabilities() {
  int cap = 0;
  if (const int rc = base::sys::RawDropBoundingSet(&cap); rc < 0) {
    return ErrnoStatus(-rc, absl::StrCat("prctl(PR_CAPBSET_DROP, ", cap, ")"));
  }
  if (const int rc = base::sys::RawClearCapabilities(); rc < 0) {
    return ErrnoStatus(-rc, "capset(none)");
  }
  return absl::OkStatus();
}

int LandlockAbi() {
  const int abi = base::sys::RawLandlockAbiVersion();
  return abi < 0 ? 0 : abi;
}

absl::StatusOr<LandlockBase> PrepareLandlockBase() {
  LandlockBase base;
  base.abi = LandlockAbi();
  if (base.abi <= 0) return base;
  uint64_t dev_access =
      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  if (base.abi >= 3) dev_access |= base::sys::kLandlockFsTruncate;  // `> /dev/null` truncates
  if (base.abi >= 5) dev_access |= base::sys::kLandlockFsIoctlDev;
  DIR* root = ::opendir("/");
  if (root == nullptr) return ErrnoStatus(errno, "opendir(/)");
  absl::Status status;
  while (const dirent* entry = ::readdir(root)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name == "tmp") continue;
    struct stat st;
    if (::fstatat(::dirfd(root), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) continue;
    uint64_t access = base::sys::kLandlockReadExecute;
    if (!S_ISDIR(st.st_mode)) access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
    if (name == "dev") access = dev_access;
    LandlockBase::Entry rule{
        absl::StrCat("/", name),
        UniqueFd(::openat(::dirfd(root), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)), access};
    if (!rule.fd.valid()) {
      status = ErrnoStatus(errno, absl::StrCat("open(", rule.path, ", O_PATH)"));
      break;
    }
    base.entries.push_back(std::move(rule));
  }
  ::closedir(root);
  if (!status.ok()) return status;
  return base;
}

absl::StatusOr<int> RestrictToRequest(LandlockBase& base, const std::string& tmp_dir) {
  // On every path out: no request may inherit the zygote's fds of "/".
  absl::Cleanup close_base = [&base] { base.entries.clear(); };
  if (base.abi <= 0) return 0;
  base::sys::LandlockRulesetAttr attr = {
      base::sys::LandlockHandledFs(base.abi), 0,
      base.abi >= 6 ? base::sys::kLandlockScopeAbstractUnixSocket | base::sys::kLandlockScopeSignal
                    : 0};
  const int ruleset_fd =
      base::sys::RawLandlockCreateRuleset(&attr, base.abi >= 6 ? sizeof(attr) : sizeof(uint64_t));
  if (ruleset_fd < 0) return ErrnoStatus(-ruleset_fd, "landlock_create_ruleset");
  UniqueFd ruleset(ruleset_fd);
  for (const LandlockBase::Entry& entry : base.entries) {
    absl::Status added = AddRule(ruleset.get(), entry.fd.get(), entry.access, entry.path.c_str());
    if (!added.ok()) return added;
  }
  UniqueFd tmp(::open(tmp_dir.c_str(), O_PATH | O_CLOEXEC));
  if (!tmp.valid()) return ErrnoStatus(errno, absl::StrCat("open(", tmp_dir, ", O_PATH)"));
  if (absl::Status s = AddRule(ruleset.get(), tmp.get(), attr.handled_access_fs, tmp_dir.c_str());
      !s.ok()) {
    return s;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus(errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  }
  if (const int rc = base::sys::RawLandlockRestrictSelf(ruleset.get()); rc < 0) {
    return ErrnoStatus(-rc, "landlock_restrict_self");
  }
  return base.abi;
}

absl::Status DieWithParent(pid_t parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    return ErrnoStatus(errno, "prctl(PR_SET_PDEATHSIG, SIGKILL)");
  }
  if (::getppid() != parent)
    return absl::AbortedError("the zygote exited before the spare was ready");
  return absl::OkStatus();
}

absl::Status IsolateSpare(absl::StatusOr<LandlockBase>& landlock) {
  absl::Cleanup close_landlock_base = [&landlock] {
    if (landlock.ok()) landlock->entries.clear();
  };
  if (!landlock.ok()) return landlock.status();
  return RestrictToRequest(*landlock, kRequestTmp).status();
}

absl::Status IsolateSpareForChildren(absl::StatusOr<LandlockBase>& landlock) {
  if (absl::Status isolated = IsolateSpare(landlock); !isolated.ok()) return isolated;
  if (::setenv("TMPDIR", kRequestTmp, 1) != 0) {
    return base::ErrnoStatus(errno, "setenv(TMPDIR=/tmp)");
  }
  return absl::OkStatus();
}

}  // namespace zygo::agents::isolation
