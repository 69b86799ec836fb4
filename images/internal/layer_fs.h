// The *at() building blocks layer_unpack.cc and layer_flatten.cc share: every path below
// a layer or rootfs root is resolved with openat2(kResolve) from a directory fd, and every
// final component is made or removed with no-follow calls. Parent side.
#ifndef ZYGO_IMAGES_INTERNAL_LAYER_FS_H_
#define ZYGO_IMAGES_INTERNAL_LAYER_FS_H_

#include <errno.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::images {

// Every lookup below a layer or rootfs root: "/" and ".." stay inside the root, and no
// symlink is followed at all, so an entry can never be written through a symlinked
// directory (it is refused, not redirected). Nothing is ever mounted inside these trees.
constexpr uint64_t kResolve =
    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
constexpr char kWhiteoutPrefix[] = ".wh.";
constexpr char kOpaqueMarker[] = ".wh..wh..opq";
constexpr char kReservedPrefix[] = ".wh..wh.";

// ---- Small *at() helpers: EINTR retried, errno returned (0 on success). ----

template <typename Call>
int ErrnoOf(Call call) {
  for (;;) {
    if (call() >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

// An fd from `call`, or -errno.
template <typename Call>
int FdOrErrno(Call call) {
  for (;;) {
    int fd = call();
    if (fd >= 0) return fd;
    if (errno != EINTR) return -errno;
  }
}

// An error naming the entry and the call: "\"etc/x\": fchmod: Permission denied".
absl::Status Failed(int err, absl::string_view entry, absl::string_view call);

// openat2(dirfd, path, kResolve); FailedPrecondition when the kernel has no openat2.
absl::StatusOr<base::UniqueFd> OpenAt2(int dirfd, const std::string& path, uint64_t flags,
                                       absl::string_view entry);

// Lists a directory (opened O_RDONLY), without "." and "..", sorted.
absl::StatusOr<std::vector<std::string>> ListDir(int dirfd, absl::string_view what);

// Removes the entry `name` of `dirfd` and all below it; errors name `what`, the entry.
absl::Status RemoveTree(int dirfd, const std::string& name, absl::string_view what);

// Removes everything inside the directory `dirfd`, never following a symlink.
absl::Status ClearDir(int dirfd, absl::string_view what);

// Makes room for a new entry `name` in `dirfd` the way a later tar entry replaces an
// earlier one. Returns true when a directory is there and `keep_dir` asked to keep it
// (a directory entry over a directory merges).
absl::StatusOr<bool> MakeRoom(int dirfd, const std::string& name, bool keep_dir,
                              absl::string_view what);

// Ownership is only kept when we may set it: as root. In a user namespace ids that are
// not mapped fail with EINVAL, and EPERM means no CAP_CHOWN; both leave the caller's ids.
// An empty `name` means `dirfd` itself.
absl::Status SetOwner(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                      absl::string_view what);

// Sets atime and mtime to `mtime`. An empty `name` means `dirfd` itself.
absl::Status SetTimes(int dirfd, const std::string& name, const struct timespec& mtime,
                      absl::string_view what);

// Directory modes and mtimes are applied after everything below them exists: creating
// entries changes a directory's mtime, and a read-only directory (0555) would stop a
// rootless caller from filling it. Until then directories are 0700.
struct DirMeta {
  mode_t mode;
  struct timespec mtime;
  bool has_mtime;
};
using DirMetaMap = std::map<std::string, DirMeta>;

// Applies `dirs` (paths below `root`), deepest first.
absl::Status ApplyDirMeta(int root, const DirMetaMap& dirs);

// Splits a tar entry name into path components. "./" prefixes and empty or "."
// components are dropped (`tar -C dir .` names everything "./x"); a leading "/" and any
// ".." are refused rather than rewritten, since no layer writer produces them.
absl::StatusOr<std::vector<std::string>> SplitEntryName(absl::string_view name,
                                                        absl::string_view what);

// Opens the directory made of the first `count` of `parts` below `root` (O_PATH),
// creating missing ones (0755) when `create`. Symlinks are refused (kResolve).
absl::StatusOr<base::UniqueFd> OpenDirBelow(int root, const std::vector<std::string>& parts,
                                            size_t count, bool create, absl::string_view entry);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_LAYER_FS_H_
