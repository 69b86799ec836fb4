#include "core/base/sys/remove_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::base::sys {
namespace {

// One open directory per level: a tree deeper than this is refused rather than allowed
// to run the process out of file descriptors.
constexpr int kMaxDepth = 256;

constexpr int kOpenDir = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : absl::StrCat(dir, "/", name);
}

// Opens the directory `name` below `dirfd`. One the caller may not read (a 0000 or 0111
// directory it owns) is first given owner rwx through an O_PATH descriptor, which pins
// the directory itself: a chmod by name would follow a symlink swapped in meanwhile.
int OpenSubdirectory(int dirfd, const std::string& name) {
  int fd = RetryOnEintr([&] { return openat(dirfd, name.c_str(), kOpenDir); });
  if (fd >= 0 || errno != EACCES) return fd;
  UniqueFd pinned(openat(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!pinned.valid()) return -1;
  const std::string by_fd = absl::StrCat("/proc/self/fd/", pinned.get());
  if (chmod(by_fd.c_str(), 0700) != 0) return -1;
  return RetryOnEintr([&] { return openat(dirfd, name.c_str(), kOpenDir); });
}

// Adds the size of `name` below `dirfd` to `*file_bytes` when it is a regular file (and
// `file_bytes` is given), before it is unlinked.
void CountFileBytes(int dirfd, const std::string& name, int64_t* file_bytes) {
  if (file_bytes == nullptr) return;
  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
    *file_bytes += st.st_size;
  }
}

absl::Status RemoveEntries(int dir_fd, const std::string& path, int depth, int64_t* file_bytes);

// `name` below `dirfd`, known to be a non-empty directory (or to have just become
// something else).
absl::Status RemoveDirectoryTree(int dirfd, const std::string& name, const std::string& path,
                                 int depth, int64_t* file_bytes) {
  if (depth > kMaxDepth) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": nested more than ", kMaxDepth, " directories deep"));
  }
  UniqueFd dir(OpenSubdirectory(dirfd, name));
  if (!dir.valid()) {
    if (errno == ENOENT) return absl::OkStatus();
    // A symlink or file now: unlinked as such, never followed.
    if (errno == ELOOP || errno == ENOTDIR) {
      if (unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
      return ErrnoStatus(errno, absl::StrCat("unlinkat(", path, ")"));
    }
    return ErrnoStatus(errno, absl::StrCat("open(", path, ", O_NOFOLLOW)"));
  }
  struct stat st;
  if (fstat(dir.get(), &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU) {
    fchmod(dir.get(), (st.st_mode & 07777) | S_IRWXU);
  }
  if (absl::Status removed = RemoveEntries(dir.get(), path, depth, file_bytes); !removed.ok()) {
    return removed;
  }
  dir.Reset();
  if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) {
    return absl::OkStatus();
  }
  return ErrnoStatus(errno, absl::StrCat("rmdir(", path, ")"));
}

// Unlinks every entry of the open directory `dir_fd` (`path`), then walks into the ones
// that turned out to be directories.
absl::Status RemoveEntries(int dir_fd, const std::string& path, int depth, int64_t* file_bytes) {
  const int listing_fd = dup(dir_fd);
  DIR* listing = listing_fd >= 0 ? fdopendir(listing_fd) : nullptr;
  if (listing == nullptr) {
    const int err = errno;
    if (listing_fd >= 0) close(listing_fd);
    return ErrnoStatus(err, absl::StrCat("fdopendir(", path, ")"));
  }
  std::vector<std::string> subdirs;
  absl::Status failed;
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    CountFileBytes(dir_fd, name, file_bytes);
    if (unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR) {
      failed = ErrnoStatus(errno, absl::StrCat("unlinkat(", Join(path, name), ")"));
      break;
    }
    subdirs.push_back(name);
  }
  closedir(listing);
  if (!failed.ok()) return failed;
  for (const std::string& name : subdirs) {
    absl::Status removed =
        RemoveDirectoryTree(dir_fd, name, Join(path, name), depth + 1, file_bytes);
    if (!removed.ok()) return removed;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RemoveTreeAt(int dirfd, const std::string& name, int64_t* file_bytes) {
  // Most trees removed are empty directories: one rmdir, no listing.
  if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) {
    return absl::OkStatus();
  }
  if (errno == ENOTDIR) {
    CountFileBytes(dirfd, name, file_bytes);
    if (unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("unlink(", name, ")"));
  }
  if (errno != ENOTEMPTY && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("rmdir(", name, ")"));
  }
  return RemoveDirectoryTree(dirfd, name, name, 0, file_bytes);
}

absl::Status RemoveTree(const std::string& path, int64_t* file_bytes) {
  return RemoveTreeAt(AT_FDCWD, path, file_bytes);
}

}  // namespace zygo::base::sys
