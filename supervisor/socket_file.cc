#include "supervisor/socket_file.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::supervisor {

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

namespace {

// TODO(issue 5): the socket calls below belong in core/base/sys (STYLE.md E.14), which has
// no socket family yet.

absl::Status EnsureDirectory(const std::string& dir) {
  absl::StatusOr<struct stat> st = base::sys::Stat(dir);
  if (st.ok()) {
    if (S_ISDIR(st->st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(dir, " exists and is not a directory"));
  }
  if (!absl::IsNotFound(st.status())) return st.status();
  ZYGO_RETURN_IF_ERROR(EnsureDirectory(ParentDir(dir)));
  absl::Status made = base::sys::MakeDirectory(dir, 0700);
  // Another process may have made it in between; that is as good.
  if (!made.ok() && base::sys::ErrnoOf(made) != EEXIST) return made;
  return absl::OkStatus();
}

// ECONNREFUSED on connect(2) is what a socket file left behind by a dead server gives;
// EAGAIN is a live listener whose backlog is full.
absl::StatusOr<bool> SomethingListensOn(const std::string& path) {
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return base::ErrnoStatus(errno, "socket(AF_UNIX, SOCK_STREAM)");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  int rc = base::RetryOnEintr(
      [&] { return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)); });
  if (rc == 0 || errno == EAGAIN) return true;
  if (errno == ECONNREFUSED || errno == ENOENT) return false;
  return base::ErrnoStatus(errno, absl::StrCat("connect(", path, ")"));
}

}  // namespace

absl::Status PrepareSocketPath(const std::string& path) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("unix socket path \"", path, "\" is ",
                                                   path.size(), " bytes; it must be 1 to ",
                                                   sizeof(sockaddr_un::sun_path) - 1));
  }
  ZYGO_RETURN_IF_ERROR(EnsureDirectory(ParentDir(path)));
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return base::ErrnoStatus(errno, absl::StrCat("lstat(", path, ")"));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; not replacing it"));
  }
  ZYGO_ASSIGN_OR_RETURN(bool live, SomethingListensOn(path));
  if (live) {
    return absl::AlreadyExistsError(absl::StrCat("another server is already listening on ", path,
                                                 " (is `zygo serve` running?)"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return base::ErrnoStatus(errno, absl::StrCat("unlink(", path, ") of a stale socket"));
  }
  return absl::OkStatus();
}

}  // namespace zygo::supervisor
