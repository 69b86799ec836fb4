#include "images/internal/layer_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/openat2.h"
#include "core/base/sys/remove_tree.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

// Explains why the directory `prefix` of `entry` could not be entered.
absl::Status NotADirectory(int parent, const std::string& name, const std::string& prefix,
                           absl::string_view entry) {
  struct stat st;
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("refusing \"", entry, "\": \"", prefix,
                                                   "\" is a symlink, and nothing is written "
                                                   "through a symlinked directory"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("\"", entry, "\": \"", prefix, "\" is not a directory"));
}

}  // namespace

absl::Status Failed(int err, absl::string_view entry, absl::string_view call) {
  return base::ErrnoStatus(err, absl::StrCat("\"", entry, "\": ", call));
}

absl::StatusOr<UniqueFd> OpenAt2(int dirfd, const std::string& path, uint64_t flags,
                                 absl::string_view entry) {
  int fd = base::sys::RawOpenat2(dirfd, path.c_str(), flags | O_CLOEXEC, 0, kResolve);
  if (fd == -ENOSYS) {
    return absl::FailedPreconditionError(
        "openat2 is unavailable (Linux 5.6+ is needed to unpack layers safely)");
  }
  if (fd < 0) return Failed(-fd, entry, absl::StrCat("openat2(", path, ", RESOLVE_IN_ROOT)"));
  return UniqueFd(fd);
}

// Lists a directory (opened O_RDONLY), without "." and "..", sorted.
absl::StatusOr<std::vector<std::string>> ListDir(int dirfd, absl::string_view what) {
  int fd = FdOrErrno([&] { return fcntl(dirfd, F_DUPFD_CLOEXEC, 0); });
  if (fd < 0) return Failed(-fd, what, "fcntl(F_DUPFD_CLOEXEC)");
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    close(fd);
    return Failed(err, what, "fdopendir");
  }
  rewinddir(dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* de = readdir(dir)) {
    absl::string_view name = de->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Failed(err, what, "readdir");
  std::sort(names.begin(), names.end());
  return names;
}

// Removes the entry `name` of `dirfd` and all below it; errors name `what`, the entry.
absl::Status RemoveTree(int dirfd, const std::string& name, absl::string_view what) {
  absl::Status removed = base::sys::RemoveTreeAt(dirfd, name);
  if (removed.ok()) return removed;
  return absl::Status(removed.code(), absl::StrCat(what, ": ", removed.message()));
}

// Removes everything inside the directory `dirfd`, never following a symlink.
absl::Status ClearDir(int dirfd, absl::string_view what) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dirfd, what));
  for (const std::string& name : names) ZYGO_RETURN_IF_ERROR(RemoveTree(dirfd, name, what));
  return absl::OkStatus();
}

// Makes room for a new entry `name` in `dirfd` the way a later tar entry replaces an
// earlier one. Returns true when a directory is there and `keep_dir` asked to keep it
// (a directory entry over a directory merges).
absl::StatusOr<bool> MakeRoom(int dirfd, const std::string& name, bool keep_dir,
                              absl::string_view what) {
  struct stat st;
  int err = ErrnoOf([&] { return fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW); });
  if (err == ENOENT) return false;
  if (err != 0) return Failed(err, what, absl::StrCat("fstatat(", name, ")"));
  if (keep_dir && S_ISDIR(st.st_mode)) return true;
  ZYGO_RETURN_IF_ERROR(RemoveTree(dirfd, name, what));
  return false;
}

// Ownership is only kept when we may set it: as root. In a user namespace ids that are
// not mapped fail with EINVAL, and EPERM means no CAP_CHOWN; both leave the caller's ids.
// An empty `name` means `dirfd` itself.
absl::Status SetOwner(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                      absl::string_view what) {
  if (geteuid() != 0) return absl::OkStatus();
  int err = ErrnoOf([&] {
    return name.empty() ? fchown(dirfd, uid, gid)
                        : fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
  });
  if (err != 0 && err != EPERM && err != EINVAL) {
    return Failed(err, what, absl::StrCat("fchownat(", uid, ":", gid, ")"));
  }
  return absl::OkStatus();
}

// Sets atime and mtime to `mtime`. An empty `name` means `dirfd` itself.
absl::Status SetTimes(int dirfd, const std::string& name, const struct timespec& mtime,
                      absl::string_view what) {
  const struct timespec times[2] = {mtime, mtime};
  int err = ErrnoOf([&] {
    return name.empty() ? futimens(dirfd, times)
                        : utimensat(dirfd, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
  });
  if (err != 0) return Failed(err, what, "utimensat");
  return absl::OkStatus();
}

absl::Status ApplyDirMeta(int root, const DirMetaMap& dirs) {
  std::vector<std::pair<size_t, const std::string*>> order;
  for (const auto& [path, meta] : dirs) {
    order.emplace_back(std::count(path.begin(), path.end(), '/'), &path);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  for (const auto& [depth, path] : order) {
    int fd =
        base::sys::RawOpenat2(root, path->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
    // Gone or no longer a directory: a later entry or layer replaced it.
    if (fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP) continue;
    if (fd < 0) return Failed(-fd, *path, "openat2(RESOLVE_IN_ROOT)");
    UniqueFd dir(fd);
    const DirMeta& meta = dirs.at(*path);
    int err = ErrnoOf([&] { return fchmod(dir.get(), meta.mode); });
    if (err != 0) return Failed(err, *path, absl::StrFormat("fchmod(%04o)", meta.mode));
    if (meta.has_mtime) ZYGO_RETURN_IF_ERROR(SetTimes(dir.get(), "", meta.mtime, *path));
  }
  return absl::OkStatus();
}

// Splits a tar entry name into path components. "./" prefixes and empty or "."
// components are dropped (`tar -C dir .` names everything "./x"); a leading "/" and any
// ".." are refused rather than rewritten, since no layer writer produces them.
absl::StatusOr<std::vector<std::string>> SplitEntryName(absl::string_view name,
                                                        absl::string_view what) {
  if (absl::StartsWith(name, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing ", what, " \"", name, "\": absolute name"));
  }
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(name, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("refusing ", what, " \"", name, "\": \"..\" component"));
    }
    parts.emplace_back(part);
  }
  return parts;
}

// Opens the directory made of the first `count` of `parts` below `root` (O_PATH),
// creating missing ones (0755) when `create`. Symlinks are refused (kResolve).
absl::StatusOr<UniqueFd> OpenDirBelow(int root, const std::vector<std::string>& parts, size_t count,
                                      bool create, absl::string_view entry) {
  std::string path = count == 0 ? "." : absl::StrJoin(parts.begin(), parts.begin() + count, "/");
  int fd = base::sys::RawOpenat2(root, path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kResolve);
  if (fd >= 0) return UniqueFd(fd);
  if (fd != -ENOENT && fd != -ELOOP && fd != -ENOTDIR) {
    return OpenAt2(root, path, O_PATH | O_DIRECTORY, entry).status();  // names the errno
  }
  // Walk one component at a time to create what is missing or to name the culprit.
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dir, OpenAt2(root, ".", O_PATH | O_DIRECTORY, entry));
  for (size_t i = 0; i < count; ++i) {
    const std::string& name = parts[i];
    std::string prefix = absl::StrJoin(parts.begin(), parts.begin() + i + 1, "/");
    fd = base::sys::RawOpenat2(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               kResolve);
    if (fd == -ENOENT && create) {
      int err = ErrnoOf([&] { return mkdirat(dir.get(), name.c_str(), 0755); });
      if (err != 0 && err != EEXIST) {
        return Failed(err, entry, absl::StrCat("mkdirat(", prefix, ")"));
      }
      fd = base::sys::RawOpenat2(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                 kResolve);
    }
    if (fd == -ELOOP || fd == -ENOTDIR) return NotADirectory(dir.get(), name, prefix, entry);
    if (fd < 0) return Failed(-fd, entry, absl::StrCat("openat2(", prefix, ", RESOLVE_IN_ROOT)"));
    dir = UniqueFd(fd);
  }
  return dir;
}

}  // namespace zygo::images
