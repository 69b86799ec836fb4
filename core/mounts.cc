#include "core/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/sys/mount_api.h"
#include "core/base/sys/openat2.h"

namespace zygo::core {
namespace {

int Rc(int rc) { return rc < 0 ? -errno : 0; }

// The source by descriptor: opened with no symlink followed in any component (ELOOP if one
// is met: a component was swapped for one after the parent's check), checked to be the
// inode the parent saw (ESTALE if not: swapped for another file), cloned from that
// descriptor and attached; nothing is looked up by path again.
int BindChecked(const MountOp& op) {
  int source = base::sys::RawOpenat2(AT_FDCWD, op.source.c_str(),
                                     O_PATH | O_CLOEXEC | (op.source_is_dir ? O_DIRECTORY : 0), 0,
                                     RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (source < 0) return source;
  struct stat st;
  int rc = Rc(fstat(source, &st));
  if (rc == 0 && (st.st_dev != op.source_dev || st.st_ino != op.source_ino)) rc = -ESTALE;
  int tree = rc < 0 ? rc : base::sys::RawOpenTreeClone(source, op.recursive);
  close(source);
  if (tree < 0) return tree;
  rc = op.attr_set == 0 ? 0 : base::sys::RawMountSetattrFd(tree, op.recursive, op.attr_set);
  if (rc == 0) rc = base::sys::RawMoveMount(tree, op.target.c_str());
  close(tree);
  return rc;
}

int ApplyOp(const MountOp& op) {
  switch (op.kind) {
    case MountOpKind::kMkdir: {
      int rc = Rc(mkdir(op.target.c_str(), 0755));
      return rc == -EEXIST ? 0 : rc;
    }
    case MountOpKind::kTouch: {
      int fd = open(op.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
      if (fd < 0) return errno == EEXIST ? 0 : -errno;
      close(fd);
      return 0;
    }
    case MountOpKind::kSymlink:
      return Rc(symlink(op.source.c_str(), op.target.c_str()));
    case MountOpKind::kBind: {
      unsigned long flags = MS_BIND | (op.recursive ? MS_REC : 0);
      int rc = Rc(mount(op.source.c_str(), op.target.c_str(), nullptr, flags, nullptr));
      if (rc < 0 || op.attr_set == 0) return rc;
      return base::sys::RawMountSetattr(op.target.c_str(), op.recursive, op.attr_set, 0);
    }
    case MountOpKind::kBindChecked:
      return BindChecked(op);
    case MountOpKind::kTmpfs:
      return Rc(mount("tmpfs", op.target.c_str(), "tmpfs", op.flags, op.data.c_str()));
    case MountOpKind::kProc:
      return Rc(mount("proc", op.target.c_str(), "proc", op.flags, nullptr));
    case MountOpKind::kReadOnly:
      return base::sys::RawMountSetattr(op.target.c_str(), op.recursive, op.attr_set, 0);
    case MountOpKind::kWriteFile: {
      int fd = open(op.target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
      if (fd < 0) return -errno;
      size_t done = 0;
      while (done < op.data.size()) {
        ssize_t n = write(fd, op.data.data() + done, op.data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          int err = n < 0 ? errno : EIO;
          close(fd);
          return -err;
        }
        done += static_cast<size_t>(n);
      }
      close(fd);
      return 0;
    }
  }
  return -EINVAL;
}

// Mounts a tmpfs on kStagingDir and pivots into it, keeping the host's root at
// kOldRoot so bind sources stay reachable whatever the host has mounted on /tmp.
ChildFailure PivotToStaging() {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return {LaunchStep::kMountPrivate, errno};
  }
  if (mount("tmpfs", kStagingDir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=700,size=64k") != 0) {
    return {LaunchStep::kMountStaging, errno};
  }
  if (chdir(kStagingDir) != 0 || mkdir("oldroot", 0700) != 0 || mkdir("newroot", 0755) != 0) {
    return {LaunchStep::kMountStaging, errno};
  }
  int rc = base::sys::RawPivotRoot(".", "oldroot");
  if (rc < 0) return {LaunchStep::kPivotToStaging, -rc};
  if (chdir("/") != 0) return {LaunchStep::kPivotToStaging, errno};
  return ChildFailure::Ok();
}

// pivot_root(".", ".") stacks the old root under the new one; detaching "." then
// drops the staging tmpfs and the host's root with it (pivot_root(2), NOTES).
ChildFailure PivotToNewRoot() {
  if (chdir(kNewRoot) != 0) return {LaunchStep::kPivotToRoot, errno};
  int rc = base::sys::RawPivotRoot(".", ".");
  if (rc < 0) return {LaunchStep::kPivotToRoot, -rc};
  if (umount2(".", MNT_DETACH) != 0) return {LaunchStep::kDetachOldRoot, errno};
  if (chdir("/") != 0) return {LaunchStep::kPivotToRoot, errno};
  rc = base::sys::RawMountSetattr("/", /*recursive=*/false, MOUNT_ATTR_RDONLY, 0);
  if (rc < 0) return {LaunchStep::kRootReadOnly, -rc};
  return ChildFailure::Ok();
}

}  // namespace

ChildFailure BuildRootInChild(const MountPlan& plan) {
  ChildFailure failure = PivotToStaging();
  if (!failure.ok()) return failure;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    int rc = ApplyOp(plan.ops[i]);
    if (rc < 0) return {LaunchStep::kMountOp, -rc, static_cast<int>(i)};
  }
  return PivotToNewRoot();
}

}  // namespace zygo::core
