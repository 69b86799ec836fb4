// A cheap copy of a store root: the same tree with every file hard-linked, so a derived
// root (the bytecode root) costs directory entries, not a second copy of the image.
// Parent side.
#ifndef ZYGO_IMAGES_LINK_TREE_H_
#define ZYGO_IMAGES_LINK_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace zygo::images {

struct LinkTreeStats {
  int64_t directories = 0;
  int64_t linked = 0;  // entries hard-linked
  int64_t copied = 0;  // entries copied because the kernel refused the link
};

// Recreates the directory `src` at `dest`, which must not exist: directories are made
// anew with src's modes, owners and mtimes; every other entry (files, symlinks, device
// nodes) is hard-linked. Where linkat(2) is refused (EXDEV across filesystems, EPERM
// under fs.protected_hardlinks for a file the caller does not own, EMLINK) regular files
// are copied and symlinks recreated; other kinds are an error. Never follows a symlink:
// every directory is opened relative to its parent with O_NOFOLLOW. Both trees must be
// private to the caller (the store's), since the links share inodes: a write through one
// name changes both.
absl::StatusOr<LinkTreeStats> LinkTree(const std::string& src, const std::string& dest);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_LINK_TREE_H_
