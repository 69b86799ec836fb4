// LinkTree: a recursive walk over directory fds (openat with O_NOFOLLOW at every level),
// so no path is ever resolved through a symlink inside either tree.
//
// TODO(images issue 3): like store.cc, the few raw calls here (linkat, mkdirat, fchownat,
// copy_file_range, ...) belong in core/base/sys; they follow its rules meanwhile: EINTR
// retried, errno read before any message is built.
#include "images/link_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

absl::StatusOr<UniqueFd> OpenDirAt(int dir, const std::string& name, const std::string& path) {
  int fd = base::RetryOnEintr(
      [&] { return ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
  if (fd < 0)
    return base::LastErrnoStatus([&] { return absl::StrCat("open(", path, ", O_DIRECTORY)"); });
  return UniqueFd(fd);
}

// The names in directory `dir` (without "." and ".."). fdopendir takes over the fd it is
// given, so it gets a duplicate.
absl::StatusOr<std::vector<std::string>> ListNames(int dir, const std::string& path) {
  int dup = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return base::LastErrnoStatus([&] { return absl::StrCat("dup(", path, ")"); });
  DIR* stream = ::fdopendir(dup);
  if (stream == nullptr) {
    absl::Status error =
        base::LastErrnoStatus([&] { return absl::StrCat("fdopendir(", path, ")"); });
    ::close(dup);
    return error;
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* entry = ::readdir(stream)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  ::closedir(stream);
  if (err != 0) return base::ErrnoStatus(err, absl::StrCat("readdir(", path, ")"));
  return names;
}

// Owner, mode and times of `st` onto `name` in `dir`. chown comes first because it clears
// setuid/setgid bits. A caller without CAP_CHOWN keeps its own ids (EPERM): a rootless
// store has nothing else to give.
absl::Status CopyMetadata(int dir, const std::string& name, const struct stat& st,
                          const std::string& path) {
  if (::fchownat(dir, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0 &&
      errno != EPERM) {
    return base::LastErrnoStatus([&] { return absl::StrCat("fchownat(", path, ")"); });
  }
  if (!S_ISLNK(st.st_mode) && ::fchmodat(dir, name.c_str(), st.st_mode & 07777, 0) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("fchmodat(", path, ")"); });
  }
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::utimensat(dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("utimensat(", path, ")"); });
  }
  return absl::OkStatus();
}

absl::Status CopyFileContents(int from, int to, const std::string& path) {
  while (true) {
    ssize_t n = base::RetryOnEintr(
        [&] { return ::copy_file_range(from, nullptr, to, nullptr, 1 << 30, 0); });
    if (n == 0) return absl::OkStatus();
    if (n > 0) continue;
    if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS) {
      return base::LastErrnoStatus([&] { return absl::StrCat("copy_file_range(", path, ")"); });
    }
    // Older kernels refuse some filesystem pairs: fall back to read/write.
    char buffer[1 << 16];
    while ((n = base::RetryOnEintr([&] { return ::read(from, buffer, sizeof(buffer)); })) > 0) {
      for (ssize_t done = 0; done < n;) {
        ssize_t w = base::RetryOnEintr([&] { return ::write(to, buffer + done, n - done); });
        if (w < 0) return base::LastErrnoStatus([&] { return absl::StrCat("write(", path, ")"); });
        done += w;
      }
    }
    if (n < 0) return base::LastErrnoStatus([&] { return absl::StrCat("read(", path, ")"); });
    return absl::OkStatus();
  }
}

// The fallback when linkat is refused: a copy of a regular file, a new symlink.
absl::Status CopyEntry(int src_dir, int dest_dir, const std::string& name, const struct stat& st,
                       const std::string& path) {
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> target(st.st_size + 1 > 4096 ? st.st_size + 1 : 4096);
    ssize_t n = ::readlinkat(src_dir, name.c_str(), target.data(), target.size() - 1);
    if (n < 0) return base::LastErrnoStatus([&] { return absl::StrCat("readlinkat(", path, ")"); });
    target[n] = '\0';
    if (::symlinkat(target.data(), dest_dir, name.c_str()) != 0) {
      return base::LastErrnoStatus([&] { return absl::StrCat("symlinkat(", path, ")"); });
    }
    return CopyMetadata(dest_dir, name, st, path);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot link or copy ", path, ": not a regular file or symlink"));
  }
  int from = base::RetryOnEintr(
      [&] { return ::openat(src_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); });
  if (from < 0) return base::LastErrnoStatus([&] { return absl::StrCat("open(", path, ")"); });
  UniqueFd in(from);
  int to = base::RetryOnEintr([&] {
    return ::openat(dest_dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
  });
  if (to < 0) return base::LastErrnoStatus([&] { return absl::StrCat("create(", path, ")"); });
  UniqueFd out(to);
  ZYGO_RETURN_IF_ERROR(CopyFileContents(in.get(), out.get(), path));
  return CopyMetadata(dest_dir, name, st, path);
}

class Walker {
 public:
  absl::Status Directory(int src_dir, int dest_dir, const std::string& path);
  LinkTreeStats stats;

 private:
  absl::Status Entry(int src_dir, int dest_dir, const std::string& name, const std::string& path);
};

absl::Status Walker::Entry(int src_dir, int dest_dir, const std::string& name,
                           const std::string& path) {
  struct stat st;
  if (::fstatat(src_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("lstat(", path, ")"); });
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::linkat(src_dir, name.c_str(), dest_dir, name.c_str(), 0) == 0) {
      ++stats.linked;
      return absl::OkStatus();
    }
    if (errno != EXDEV && errno != EPERM && errno != EMLINK) {
      return base::LastErrnoStatus([&] { return absl::StrCat("linkat(", path, ")"); });
    }
    ++stats.copied;
    return CopyEntry(src_dir, dest_dir, name, st, path);
  }
  // Made owner-writable so it can be filled; its own mode comes back afterwards.
  if (::mkdirat(dest_dir, name.c_str(), 0700) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("mkdir(", path, ")"); });
  }
  ZYGO_ASSIGN_OR_RETURN(UniqueFd src_child, OpenDirAt(src_dir, name, path));
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dest_child, OpenDirAt(dest_dir, name, path));
  ZYGO_RETURN_IF_ERROR(Directory(src_child.get(), dest_child.get(), path));
  ++stats.directories;
  return CopyMetadata(dest_dir, name, st, path);
}

absl::Status Walker::Directory(int src_dir, int dest_dir, const std::string& path) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(src_dir, path));
  for (const std::string& name : names) {
    ZYGO_RETURN_IF_ERROR(Entry(src_dir, dest_dir, name, absl::StrCat(path, "/", name)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LinkTreeStats> LinkTree(const std::string& src, const std::string& dest) {
  struct stat st;
  if (::lstat(src.c_str(), &st) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("lstat(", src, ")"); });
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(src, " is not a directory"));
  }
  if (::mkdir(dest.c_str(), 0700) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("mkdir(", dest, ")"); });
  }
  ZYGO_ASSIGN_OR_RETURN(UniqueFd src_fd, OpenDirAt(AT_FDCWD, src, src));
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dest_fd, OpenDirAt(AT_FDCWD, dest, dest));
  Walker walker;
  ZYGO_RETURN_IF_ERROR(walker.Directory(src_fd.get(), dest_fd.get(), dest));
  ZYGO_RETURN_IF_ERROR(CopyMetadata(AT_FDCWD, dest, st, dest));
  ++walker.stats.directories;
  return walker.stats;
}

}  // namespace zygo::images
