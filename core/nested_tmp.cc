#include "core/nested_tmp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/capabilities.h"
#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"

namespace zygo::core {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

constexpr size_t kHelperStackBytes = 64 * 1024;
// Each inode costs kernel memory outside the size limit: one per 4 KiB page allowed, as
// the kernel's own default is one per page of RAM.
constexpr int64_t kMinInodes = 1024;

// What the helper child needs, all prepared by the parent; the child writes only the
// failure fields. The parent waits (CLONE_VFORK) before it reads them.
struct HelperArgs {
  int sandbox_user = -1;  // -1: the caller is in that user namespace already
  int spare_user = -1;
  int spare_mnt = -1;
  int spare_proc = -1;     // /proc/<spare>, O_PATH
  int proc_sys_user = -1;  // the caller's /proc/sys/user, O_PATH
  char size[32] = {};
  char inodes[32] = {};
  char gid_map[48] = {};
  const char* failed_step = nullptr;
  int failed_errno = 0;
};

int Fail(HelperArgs* args, const char* step) {
  args->failed_step = step;
  args->failed_errno = errno;
  return 1;
}

bool WriteAll(int dir, const char* name, const char* text) {
  const int fd = static_cast<int>(::syscall(SYS_openat, dir, name, O_WRONLY | O_CLOEXEC));
  if (fd < 0) return false;
  const size_t length = strlen(text);
  const bool written = ::syscall(SYS_write, fd, text, length) == static_cast<long>(length);
  const int saved = errno;
  ::syscall(SYS_close, fd);
  errno = saved;
  return written;
}

// Formats "ID ID 1" without stdio (the helper shares the caller's memory and locks).
void FormatIdentityMap(uint32_t id, char* out, size_t size) {
  char digits[16];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + id % 10);
    id /= 10;
  } while (id != 0);
  size_t at = 0;
  for (int copy = 0; copy < 2; ++copy) {
    for (size_t i = n; i > 0 && at + 1 < size; --i) out[at++] = digits[i - 1];
    if (at + 1 < size) out[at++] = ' ';
  }
  if (at + 2 < size) {
    out[at++] = '1';
    out[at++] = '\n';
  }
  out[at] = '\0';
}

// The helper child: shares the caller's memory (CLONE_VM), so raw syscalls only, and no
// glibc call that would act on the caller's other threads (glibc's setresuid does).
int MountInSpare(void* raw) {
  auto* args = static_cast<HelperArgs*>(raw);
  if (args->sandbox_user >= 0 && ::syscall(SYS_setns, args->sandbox_user, CLONE_NEWUSER) != 0) {
    return Fail(args, "setns(the sandbox's user namespace)");
  }
  // The spare's user namespace gives every capability to its owner in the parent
  // namespace: become that owner, keeping the capabilities setns gave in the sandbox's.
  uid_t owner = 0;
  if (::syscall(SYS_ioctl, args->spare_user, NS_GET_OWNER_UID, &owner) != 0) {
    return Fail(args, "ioctl(NS_GET_OWNER_UID)");
  }
  if (static_cast<uid_t>(::syscall(SYS_geteuid)) != owner) {
    if (::syscall(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
      return Fail(args, "PR_SET_KEEPCAPS");
    if (::syscall(SYS_setresuid, owner, owner, owner) != 0) return Fail(args, "setresuid(owner)");
    if (const int rc = base::sys::RawRaiseEffectiveToPermitted(); rc < 0) {
      errno = -rc;
      return Fail(args, "capset(effective = permitted)");
    }
  }
  if (::syscall(SYS_setns, args->spare_mnt, CLONE_NEWNS) != 0) {
    return Fail(args, "setns(the spare's mount namespace)");
  }
  const int tmp = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, "/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (tmp < 0) return Fail(args, "open(/tmp)");
  const int context = static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
  if (context < 0) return Fail(args, "fsopen(tmpfs)");
  if (::syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, "size", args->size, 0) != 0) {
    return Fail(args, "fsconfig(size)");
  }
  if (::syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, "nr_inodes", args->inodes, 0) != 0) {
    return Fail(args, "fsconfig(nr_inodes)");
  }
  if (::syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, "mode", "1777", 0) != 0) {
    return Fail(args, "fsconfig(mode)");
  }
  if (::syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return Fail(args, "fsconfig(create)");
  }
  const int mount = static_cast<int>(
      ::syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (mount < 0) return Fail(args, "fsmount");
  if (::syscall(SYS_move_mount, mount, "", tmp, "",
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    return Fail(args, "move_mount(/tmp)");
  }
  char uid_map[48];
  FormatIdentityMap(owner, uid_map, sizeof(uid_map));
  if (!WriteAll(args->spare_proc, "uid_map", uid_map)) return Fail(args, "write(uid_map)");
  if (!WriteAll(args->spare_proc, "gid_map", args->gid_map)) return Fail(args, "write(gid_map)");
  // No user namespace within the spare's: its request gets none of the capabilities a new
  // one gives, nor the kernel surface, nor a share of the sandbox's budget of them. The
  // limit is the writer's namespace's, looked up when the file is opened.
  if (::syscall(SYS_setns, args->spare_user, CLONE_NEWUSER) != 0) {
    return Fail(args, "setns(the spare's user namespace)");
  }
  if (!WriteAll(args->proc_sys_user, "max_user_namespaces", "0\n")) {
    return Fail(args, "write(max_user_namespaces)");
  }
  return 0;
}

absl::StatusOr<struct stat> StatOf(int fd, const char* what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("fstat(", what, ")"));
  return st;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The namespace `request` (NS_GET_PARENT, NS_GET_USERNS) names of `ns`, as a stat.
absl::StatusOr<struct stat> RelatedNamespace(int ns, unsigned long request, const char* what) {
  UniqueFd related(::ioctl(ns, request));
  if (!related.valid()) return ErrnoStatus(errno, absl::StrCat("ioctl(", what, ")"));
  return StatOf(related.get(), what);
}

absl::Status CheckAlive(int pidfd, const char* who) {
  if (const int rc = base::sys::RawPidfdSendSignal(pidfd, 0); rc < 0) {
    return ErrnoStatus(-rc, absl::StrCat(who, " is gone"));
  }
  return absl::OkStatus();
}

absl::Status RunHelper(HelperArgs& args) {
  void* stack = ::mmap(nullptr, kHelperStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return ErrnoStatus(errno, "mmap(helper stack)");
  absl::Cleanup unmap = [stack] { ::munmap(stack, kHelperStackBytes); };
  // No signal handler of the caller's may run on the helper's stack.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // Exit signal 0: only a __WALL wait sees it, so no other waiter of the caller's reaps it.
  const pid_t child = ::clone(MountInSpare, static_cast<char*>(stack) + kHelperStackBytes,
                              CLONE_VM | CLONE_VFORK, &args);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (child < 0) return ErrnoStatus(clone_errno, "clone(the /tmp helper)");
  int status = 0;
  while (::waitpid(child, &status, __WALL) < 0 && errno == EINTR) {
  }
  if (args.failed_step != nullptr) {
    return ErrnoStatus(args.failed_errno, args.failed_step);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError("the /tmp helper did not finish");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MountOwnTmp(const NestedTmpTarget& target, const NestedTmpOptions& options) {
  const std::string init_ns = absl::StrCat("/proc/", target.sandbox_init, "/ns/user");
  UniqueFd sandbox_user(::open(init_ns.c_str(), O_RDONLY | O_CLOEXEC));
  if (!sandbox_user.valid()) return ErrnoStatus(errno, absl::StrCat("open(", init_ns, ")"));
  const std::string spare_dir = absl::StrCat("/proc/", target.spare);
  UniqueFd spare_proc(::open(spare_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!spare_proc.valid()) return ErrnoStatus(errno, absl::StrCat("open(", spare_dir, ")"));
  UniqueFd spare_user(::openat(spare_proc.get(), "ns/user", O_RDONLY | O_CLOEXEC));
  if (!spare_user.valid()) return ErrnoStatus(errno, "open(the spare's ns/user)");
  UniqueFd spare_mnt(::openat(spare_proc.get(), "ns/mnt", O_RDONLY | O_CLOEXEC));
  if (!spare_mnt.valid()) return ErrnoStatus(errno, "open(the spare's ns/mnt)");
  // Opened by pid, so only now alive-checked: a pid reused before the opens fails here.
  ZYGO_RETURN_IF_ERROR(CheckAlive(target.sandbox_init_pidfd, "the sandbox"));
  ZYGO_RETURN_IF_ERROR(CheckAlive(target.spare_pidfd, "the spare"));

  ZYGO_ASSIGN_OR_RETURN(struct stat sandbox_ns, StatOf(sandbox_user.get(), "sandbox ns/user"));
  ZYGO_ASSIGN_OR_RETURN(struct stat spare_ns, StatOf(spare_user.get(), "spare ns/user"));
  // EPERM: its user namespace has no parent we may see, so it is not one made below ours.
  absl::StatusOr<struct stat> spare_parent =
      RelatedNamespace(spare_user.get(), NS_GET_PARENT, "NS_GET_PARENT");
  if (!spare_parent.ok() && !absl::IsPermissionDenied(spare_parent.status())) {
    return spare_parent.status();
  }
  if (!spare_parent.ok() || !SameFile(*spare_parent, sandbox_ns)) {
    return absl::FailedPreconditionError(
        "the spare is not in a user namespace of its own made in the sandbox's (its "
        "unshare(CLONE_NEWUSER) failed: the host must allow nested user namespaces)");
  }
  ZYGO_ASSIGN_OR_RETURN(struct stat mnt_owner,
                        RelatedNamespace(spare_mnt.get(), NS_GET_USERNS, "NS_GET_USERNS"));
  if (!SameFile(mnt_owner, spare_ns)) {
    return absl::FailedPreconditionError("the spare is not in a mount namespace of its own");
  }

  // Ours, not the sandbox's: the sandbox's /proc/sys is read-only.
  UniqueFd proc_sys_user(::open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc_sys_user.valid()) return ErrnoStatus(errno, "open(/proc/sys/user)");
  HelperArgs args;
  args.proc_sys_user = proc_sys_user.get();
  UniqueFd own_user(::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
  if (!own_user.valid()) return ErrnoStatus(errno, "open(/proc/self/ns/user)");
  ZYGO_ASSIGN_OR_RETURN(struct stat own_ns, StatOf(own_user.get(), "own ns/user"));
  args.sandbox_user = SameFile(own_ns, sandbox_ns) ? -1 : sandbox_user.get();
  args.spare_user = spare_user.get();
  args.spare_mnt = spare_mnt.get();
  args.spare_proc = spare_proc.get();
  const int64_t size = std::max<int64_t>(options.size_bytes, 4096);
  snprintf(args.size, sizeof(args.size), "%lld", static_cast<long long>(size));
  snprintf(args.inodes, sizeof(args.inodes), "%lld",
           static_cast<long long>(std::max(kMinInodes, size / 4096)));
  FormatIdentityMap(options.gid, args.gid_map, sizeof(args.gid_map));
  absl::Status mounted = RunHelper(args);
  if (!mounted.ok()) {
    return absl::Status(mounted.code(),
                        absl::StrCat("cannot give the spare its own /tmp: ", mounted.message()));
  }
  return absl::OkStatus();
}

}  // namespace zygo::core
