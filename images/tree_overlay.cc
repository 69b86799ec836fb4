// The overlay as a walk of the tree, one directory at a time: files first (so a .py
// placed here clears stale bytecode before the tree's own __pycache__, if any, arrives),
// then subdirectories.
#include "images/tree_overlay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/openat2.h"
#include "core/base/unique_fd.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

// The root's own symlinks are followed, as dpkg follows them, but only inside the root.
constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

absl::Status Failed(int err, const std::string& rel, absl::string_view call) {
  return base::ErrnoStatus(err, absl::StrCat(call, "(/", rel, ")"));
}

struct Entry {
  std::string name;
  struct stat st;
};

// The entries of `dir`, lstat'ed, sorted by name.
absl::StatusOr<std::vector<Entry>> List(int dir, const std::string& rel) {
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Failed(errno, rel, "open");
  DIR* stream = ::fdopendir(fd);
  if (stream == nullptr) {
    int err = errno;
    ::close(fd);
    return Failed(err, rel, "fdopendir");
  }
  std::vector<Entry> entries;
  int err = 0;
  while (struct dirent* entry = ::readdir(stream)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    Entry listed{name, {}};
    if (::fstatat(dir, name.c_str(), &listed.st, AT_SYMLINK_NOFOLLOW) != 0) {
      err = errno;
      break;
    }
    entries.push_back(std::move(listed));
  }
  ::closedir(stream);
  if (err != 0) return Failed(err, rel, "fstatat");
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return entries;
}

// `rel` below `root` as a directory (O_PATH), resolved inside the root; ENOENT and
// ENOTDIR come back as errno values for the caller to judge.
absl::StatusOr<UniqueFd> OpenRootDir(int root, const std::string& rel, int* err) {
  int fd = base::sys::RawOpenat2(root, rel.empty() ? "." : rel.c_str(),
                                 O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kInRoot);
  if (fd >= 0) return UniqueFd(fd);
  *err = -fd;
  if (-fd == ENOENT || -fd == ENOTDIR) return UniqueFd();
  return Failed(-fd, rel, "openat2");
}

class Overlay {
 public:
  explicit Overlay(int root) : root_(root) {}

  // Merges the tree directory `from` (already open) into the root's directory `rel`,
  // which exists.
  absl::Status Merge(int from, const std::string& rel) {
    ZYGO_ASSIGN_OR_RETURN(std::vector<Entry> entries, List(from, rel));
    int err = 0;
    ZYGO_ASSIGN_OR_RETURN(UniqueFd into, OpenRootDir(root_, rel, &err));
    if (!into.valid()) return Failed(err, rel, "openat2");
    for (const Entry& entry : entries) {
      if (S_ISREG(entry.st.st_mode) || S_ISLNK(entry.st.st_mode)) {
        ZYGO_RETURN_IF_ERROR(Place(from, into.get(), rel, entry));
      }
    }
    for (const Entry& entry : entries) {
      if (!S_ISDIR(entry.st.st_mode)) continue;
      const std::string child = Join(rel, entry.name);
      ZYGO_RETURN_IF_ERROR(EnsureDirectory(into.get(), child, entry));
      int fd = ::openat(from, entry.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return Failed(errno, child, "open");
      UniqueFd sub(fd);
      ZYGO_RETURN_IF_ERROR(Merge(sub.get(), child));
    }
    return absl::OkStatus();
  }

  const OverlayStats& stats() const { return stats_; }

 private:
  static std::string Join(const std::string& rel, const std::string& name) {
    return rel.empty() ? name : absl::StrCat(rel, "/", name);
  }

  // The root's `rel` as a directory: there already (through a symlink of the root, too)
  // or made in `parent` with the tree's mode.
  absl::Status EnsureDirectory(int parent, const std::string& rel, const Entry& entry) {
    int err = 0;
    ZYGO_ASSIGN_OR_RETURN(UniqueFd existing, OpenRootDir(root_, rel, &err));
    if (existing.valid()) return absl::OkStatus();
    struct stat st;
    if (err == ENOTDIR || ::fstatat(parent, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("/", rel, ": a directory of the packages where the image has a file"));
    }
    if (::mkdirat(parent, entry.name.c_str(), entry.st.st_mode & 01777) != 0) {
      return Failed(errno, rel, "mkdir");
    }
    // mkdir's mode went through the umask; the tree's is the one wanted.
    if (::fchmodat(parent, entry.name.c_str(), entry.st.st_mode & 01777, 0) != 0) {
      return Failed(errno, rel, "chmod");
    }
    return absl::OkStatus();
  }

  absl::Status Place(int from, int into, const std::string& dir_rel, const Entry& entry) {
    const std::string rel = Join(dir_rel, entry.name);
    struct stat there;
    if (::fstatat(into, entry.name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(there.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("/", rel, ": a file of the packages where the image has a directory"));
    }
    if (S_ISREG(entry.st.st_mode) && (entry.st.st_mode & (S_ISUID | S_ISGID)) != 0 &&
        ::fchmodat(from, entry.name.c_str(), entry.st.st_mode & 01777, 0) != 0) {
      return Failed(errno, rel, "chmod");
    }
    if (::renameat(from, entry.name.c_str(), into, entry.name.c_str()) != 0) {
      return Failed(errno, rel, "rename");
    }
    ++stats_.files;
    if (S_ISREG(entry.st.st_mode)) stats_.bytes += entry.st.st_size;
    if (S_ISREG(entry.st.st_mode) && absl::EndsWith(entry.name, ".py")) {
      return RemoveStaleBytecode(into, dir_rel, entry.name.substr(0, entry.name.size() - 3));
    }
    return absl::OkStatus();
  }

  // __pycache__/STEM.<tag>.pyc beside a replaced STEM.py.
  absl::Status RemoveStaleBytecode(int into, const std::string& dir_rel, const std::string& stem) {
    const std::string rel = Join(dir_rel, "__pycache__");
    int fd = ::openat(into, "__pycache__", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return absl::OkStatus();  // none, or not a real directory: nothing of ours
    UniqueFd cache(fd);
    ZYGO_ASSIGN_OR_RETURN(std::vector<Entry> entries, List(cache.get(), rel));
    for (const Entry& entry : entries) {
      if (!absl::StartsWith(entry.name, stem + ".") || !absl::EndsWith(entry.name, ".pyc") ||
          S_ISDIR(entry.st.st_mode)) {
        continue;
      }
      if (::unlinkat(cache.get(), entry.name.c_str(), 0) != 0) {
        return Failed(errno, Join(rel, entry.name), "unlink");
      }
      ++stats_.stale_pyc;
    }
    return absl::OkStatus();
  }

  int root_;
  OverlayStats stats_;
};

}  // namespace

absl::StatusOr<OverlayStats> OverlayTree(const std::string& tree, const std::string& root) {
  // O_NOFOLLOW: the tree is what a sandboxed job left; had it replaced the directory with
  // a link to a host directory, the walk would move that directory's files.
  int fd = ::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(errno, absl::StrCat("open(", tree, ", O_NOFOLLOW)"));
  UniqueFd from(fd);
  ZYGO_ASSIGN_OR_RETURN(UniqueFd into, base::sys::OpenDirectory(root));
  Overlay overlay(into.get());
  ZYGO_RETURN_IF_ERROR(overlay.Merge(from.get(), ""));
  return overlay.stats();
}

}  // namespace zygo::images
