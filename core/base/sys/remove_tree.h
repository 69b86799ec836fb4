// Removing a directory tree that someone else may have written, or may still be writing
// to: a request's temporary directory, an unpacked image layer, a bench's scratch copy.
#ifndef ZYGO_CORE_BASE_SYS_REMOVE_TREE_H_
#define ZYGO_CORE_BASE_SYS_REMOVE_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace zygo::base::sys {

// Removes `name` in the directory `dirfd` (or a path, with AT_FDCWD) and everything below
// it. A symlink is removed, never followed: each directory is opened below its parent
// with O_NOFOLLOW, so one swapped for a symlink during the walk is unlinked as the
// symlink it has become. Directories without owner rwx (a layer's 0555 ones) get it first.
// Nothing there is OK. Adds the sizes of the regular files removed to `file_bytes` when
// given. Parent side only.
absl::Status RemoveTreeAt(int dirfd, const std::string& name, int64_t* file_bytes = nullptr);

// RemoveTreeAt(AT_FDCWD, path, file_bytes).
absl::Status RemoveTree(const std::string& path, int64_t* file_bytes = nullptr);

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_REMOVE_TREE_H_
