// Private temp dir, Landlock domain and parent-death signal for one spare.
#include "agents/python/isolation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/landlock.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::python {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

absl::Status AddRule(int ruleset, const char* path, uint64_t access) {
  UniqueFd dir(::open(path, O_PATH | O_CLOEXEC));
  if (!dir.valid()) return ErrnoStatus(errno, absl::StrCat("open(", path, ", O_PATH)"));
  if (const int rc = base::sys::RawLandlockAddPathRule(ruleset, dir.get(), access); rc < 0) {
    return ErrnoStatus(-rc, absl::StrCat("landlock_add_rule(", path, ")"));
  }
  return absl::OkStatus();
}

// One rule per entry of "/" (read/execute; /dev also writable as `dev_access` says),
// skipping /tmp and symlinks (their targets are entries of their own, such as /usr/lib).
absl::Status AllowTopLevelEntries(int ruleset, uint64_t dev_access) {
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
    status = AddRule(ruleset, absl::StrCat("/", name).c_str(), access);
    if (!status.ok()) break;
  }
  ::closedir(root);
  return status;
}

absl::Status RemoveContents(int dir_fd, const std::string& path, int depth) {
  if (depth > 64) return absl::ResourceExhaustedError(absl::StrCat(path, ": nested too deep"));
  const int listing_fd = ::dup(dir_fd);
  DIR* listing = listing_fd >= 0 ? ::fdopendir(listing_fd) : nullptr;
  if (listing == nullptr) {
    if (listing_fd >= 0) ::close(listing_fd);
    return ErrnoStatus(errno, absl::StrCat("fdopendir(", path, ")"));
  }
  std::vector<std::string> subdirs;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR) {
      ::closedir(listing);
      return ErrnoStatus(errno, absl::StrCat("unlinkat(", path, "/", name, ")"));
    }
    subdirs.push_back(name);
  }
  ::closedir(listing);
  for (const std::string& name : subdirs) {
    UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return ErrnoStatus(errno, absl::StrCat("openat(", path, "/", name, ")"));
    const std::string sub_path = absl::StrCat(path, "/", name);
    if (absl::Status status = RemoveContents(sub.get(), sub_path, depth + 1); !status.ok()) {
      return status;
    }
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("rmdir(", sub_path, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string RequestTmpDir(uint64_t spare_id) { return absl::StrCat("/tmp/zygo-req-", spare_id); }

absl::Status MakeRequestTmpDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0)
    return ErrnoStatus(errno, absl::StrCat("mkdir(", dir, ", 0700)"));
  // mkdir applies the umask, which can only remove bits; 0700 is what we mean whatever it is.
  if (::chmod(dir.c_str(), 0700) != 0)
    return ErrnoStatus(errno, absl::StrCat("chmod(", dir, ", 0700)"));
  return absl::OkStatus();
}

int LandlockAbi() {
  const int abi = base::sys::RawLandlockAbiVersion();
  return abi < 0 ? 0 : abi;
}

absl::StatusOr<int> RestrictToRequest(const std::string& tmp_dir) {
  const int abi = LandlockAbi();
  if (abi <= 0) return 0;
  base::sys::LandlockRulesetAttr attr = {
      base::sys::LandlockHandledFs(abi), 0,
      abi >= 6 ? base::sys::kLandlockScopeAbstractUnixSocket | base::sys::kLandlockScopeSignal : 0};
  const int ruleset_fd =
      base::sys::RawLandlockCreateRuleset(&attr, abi >= 6 ? sizeof(attr) : sizeof(uint64_t));
  if (ruleset_fd < 0) return ErrnoStatus(-ruleset_fd, "landlock_create_ruleset");
  UniqueFd ruleset(ruleset_fd);
  uint64_t dev_access =
      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  if (abi >= 3) dev_access |= base::sys::kLandlockFsTruncate;  // `> /dev/null` opens with O_TRUNC.
  if (abi >= 5) dev_access |= base::sys::kLandlockFsIoctlDev;
  // Read and execute everywhere but /tmp, whose other entries are other requests' private
  // directories: a rule on "/" would cover them, so each top-level entry gets its own.
  if (absl::Status s = AllowTopLevelEntries(ruleset.get(), dev_access); !s.ok()) return s;
  if (absl::Status s = AddRule(ruleset.get(), tmp_dir.c_str(), attr.handled_access_fs); !s.ok()) {
    return s;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus(errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  }
  if (const int rc = base::sys::RawLandlockRestrictSelf(ruleset.get()); rc < 0) {
    return ErrnoStatus(-rc, "landlock_restrict_self");
  }
  return abi;
}

absl::Status DieWithParent(pid_t parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    return ErrnoStatus(errno, "prctl(PR_SET_PDEATHSIG, SIGKILL)");
  }
  if (::getppid() != parent)
    return absl::AbortedError("the zygote exited before the spare was ready");
  return absl::OkStatus();
}

absl::Status RemoveTree(const std::string& dir) {
  UniqueFd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.valid()) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("open(", dir, ", O_NOFOLLOW)"));
  }
  if (absl::Status status = RemoveContents(root.get(), dir, 0); !status.ok()) return status;
  root.Reset();
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    return ErrnoStatus(errno, absl::StrCat("rmdir(", dir, ")"));
  return absl::OkStatus();
}

}  // namespace zygo::agents::python
