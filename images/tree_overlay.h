// Lays a tree of new files (the packages a system-layer build extracted) over a derived
// root, the way dpkg unpacks into a live system: a directory of the tree merges into the
// root's directory of that name, following the root's own symlinks inside the root (so
// a package's /lib/x lands in /usr/lib/x of a merged-/usr image instead of replacing the
// /lib link), and a file or symlink replaces what the root had there. Parent side.
#ifndef ZYGO_IMAGES_TREE_OVERLAY_H_
#define ZYGO_IMAGES_TREE_OVERLAY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace zygo::images {

struct OverlayStats {
  int64_t files = 0;      // regular files and symlinks placed
  int64_t bytes = 0;      // of the regular files
  int64_t stale_pyc = 0;  // bytecode removed because its .py was replaced
};

// Moves every regular file and symlink of `tree` into `root` (rename(2): both must be on
// one filesystem, and `tree` is consumed), creating missing directories with the tree's
// modes; fifos, sockets and devices are skipped. The tree is walked without following
// any symlink, `tree` itself included (a link there is an error); the root's paths are resolved
// with openat2(RESOLVE_IN_ROOT), so nothing lands outside `root`. Setuid and setgid bits are
// dropped. A file placed as NAME.py removes NAME.*.pyc from the __pycache__ beside it: the store's
// bytecode is unchecked-hash (images/bytecode_layer.h), so Python would never notice the new
// source. A file of the tree over a directory of the root, or a directory over a file, is
// FailedPrecondition naming the path. Both trees must be the caller's own (nothing else
// writes to them meanwhile).
absl::StatusOr<OverlayStats> OverlayTree(const std::string& tree, const std::string& root);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_TREE_OVERLAY_H_
