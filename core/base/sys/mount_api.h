// Mount syscalls the glibc headers do not wrap (pivot_root, mount_setattr, open_tree,
// move_mount, fsopen/fsconfig/fsmount).
// Async-signal-safe; each returns 0 or -errno.
#ifndef ZYGO_CORE_BASE_SYS_MOUNT_API_H_
#define ZYGO_CORE_BASE_SYS_MOUNT_API_H_

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::base::sys {

inline int RawPivotRoot(const char* new_root, const char* put_old) {
  int rc = static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
  return rc < 0 ? -errno : 0;
}

// Sets and clears mount attributes on the mount at `path` (and below it when
// `recursive`), leaving every other attribute as it was. Unlike a MS_REMOUNT this keeps
// the flags the kernel locks in a user namespace (nosuid, nodev, atime), so it cannot
// fail with EPERM for forgetting one of them.
inline int RawMountSetattr(const char* path, bool recursive, unsigned long long set,
                           unsigned long long clear) {
  struct mount_attr attr = {};
  attr.attr_set = set;
  attr.attr_clr = clear;
  unsigned flags = AT_SYMLINK_NOFOLLOW | (recursive ? AT_RECURSIVE : 0);
  int rc =
      static_cast<int>(::syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof(attr)));
  return rc < 0 ? -errno : 0;
}

// mount_setattr with a zero-sized attribute, which a kernel that has it (Linux 5.12+)
// rejects with EINVAL before looking up the path: -EINVAL says it is there, -ENOSYS or
// -EPERM that the kernel lacks it or a seccomp filter answers for it. Changes nothing.
inline int RawMountSetattrProbe() {
  int rc = static_cast<int>(::syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0));
  return rc < 0 ? -errno : 0;
}

// open_tree(fd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH [| AT_RECURSIVE]): a detached copy of
// the mount (tree) at `fd`, which must be in the caller's mount namespace. Returns the new
// fd (CLOEXEC) or -errno.
inline int RawOpenTreeClone(int fd, bool recursive) {
  unsigned flags =
      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  int rc = static_cast<int>(::syscall(SYS_open_tree, fd, "", flags));
  return rc < 0 ? -errno : rc;
}

// mount_setattr on a detached tree's fd: sets `set` on it (recursively when `recursive`),
// and its propagation to `propagation` (MS_PRIVATE, ...; 0 leaves it as it is).
inline int RawMountSetattrFd(int tree, bool recursive, unsigned long long set,
                             unsigned long long propagation = 0) {
  struct mount_attr attr = {};
  attr.attr_set = set;
  attr.propagation = propagation;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  int rc = static_cast<int>(::syscall(SYS_mount_setattr, tree, "", flags, &attr, sizeof(attr)));
  return rc < 0 ? -errno : 0;
}

// move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH): attaches a detached
// tree at `target`, which is not followed if it is a symlink (the default without
// MOVE_MOUNT_T_SYMLINKS).
inline int RawMoveMount(int tree, const char* target) {
  int rc = static_cast<int>(
      ::syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
  return rc < 0 ? -errno : 0;
}

// move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH):
// attaches a detached tree on the file `target` (an O_PATH fd) was opened on.
inline int RawMoveMountOnto(int tree, int target) {
  int rc = static_cast<int>(::syscall(SYS_move_mount, tree, "", target, "",
                                      MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  return rc < 0 ? -errno : 0;
}

// fsopen(fs_type, FSOPEN_CLOEXEC): a filesystem context, configured with the calls below.
// Returns its fd or -errno.
inline int RawFsopen(const char* fs_type) {
  int rc = static_cast<int>(::syscall(SYS_fsopen, fs_type, FSOPEN_CLOEXEC));
  return rc < 0 ? -errno : rc;
}

// fsconfig(context, FSCONFIG_SET_STRING, key, value).
inline int RawFsconfigString(int context, const char* key, const char* value) {
  int rc = static_cast<int>(::syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, key, value, 0));
  return rc < 0 ? -errno : 0;
}

// fsconfig(context, FSCONFIG_CMD_CREATE): makes the superblock.
inline int RawFsconfigCreate(int context) {
  int rc =
      static_cast<int>(::syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0));
  return rc < 0 ? -errno : 0;
}

// fsmount(context, FSMOUNT_CLOEXEC, attrs): a detached mount of the created superblock,
// with MOUNT_ATTR_* `attrs`. Returns its fd or -errno.
inline int RawFsmount(int context, unsigned attrs) {
  int rc = static_cast<int>(::syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC, attrs));
  return rc < 0 ? -errno : rc;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_MOUNT_API_H_
