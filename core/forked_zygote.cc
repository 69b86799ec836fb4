#include "core/forked_zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/mount_api.h"
#include "core/base/sys/namespaces.h"
#include "core/base/sys/netdevice.h"
#include "core/base/sys/openat2.h"
#include "core/base/unique_fd.h"
#include "core/internal/namespace_helper.h"
#include "core/mount_plan.h"

namespace zygo::core {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;
using internal::Fail;
using internal::HelperFailure;
namespace sys = base::sys;

constexpr char kProcSysUser[] = "/proc/sys/user/";
constexpr size_t kMaxLimits = 8;

// What the helper and its child need, prepared by the parent, and what they leave for each
// other. The parent waits (CLONE_VFORK) before it reads `failure` and `code_changed`.
struct SealArgs {
  int runtime_user = -1;  // -1: the caller is in R already
  int zygote_proc = -1;   // /proc/<Z>, O_PATH
  int zygote_user = -1;
  int zygote_mnt = -1;
  int zygote_pid = -1;
  int zygote_net = -1;
  int proc_sys_user = -1;  // the caller's /proc/sys/user, O_PATH
  const char* code_dir = nullptr;
  dev_t code_dev = 0;
  ino_t code_ino = 0;
  internal::TmpfsSize tmp_size;
  internal::TmpfsSize shm_size;
  uint32_t gid = 0;
  const char* limit_names[kMaxLimits] = {};
  const char* limit_values[kMaxLimits] = {};
  size_t limits = 0;
  char* mounter_stack = nullptr;
  // The helper's detached trees (fds of its own table, which its child copies).
  int code_tree = -1;
  int tmp_tree = -1;
  int shm_tree = -1;
  HelperFailure failure;
  bool code_changed = false;  // the failure is code_dir's: a refusal
};

// ---- Child side (core/internal/namespace_helper.h: raw syscalls only).

// code_dir, opened without following any symlink (ELOOP if a component became one after
// the caller's check), checked to be the inode the caller saw, and cloned from that
// descriptor: nothing is looked up by path again.
int CloneCode(SealArgs* args) {
  HelperFailure* failure = &args->failure;
  const int code = sys::RawOpenat2(AT_FDCWD, args->code_dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (code < 0) {
    args->code_changed = -code == ELOOP || -code == ENOENT || -code == ENOTDIR;
    return Fail(failure, "openat2(code_dir, RESOLVE_NO_SYMLINKS)", args->code_dir, -code);
  }
  struct stat st;
  int rc = ::syscall(SYS_fstat, code, &st) == 0 ? 0 : -errno;
  if (rc < 0) {
    Fail(failure, "fstat(code_dir)", args->code_dir, -rc);
  } else if (st.st_dev != args->code_dev || st.st_ino != args->code_ino) {
    args->code_changed = true;
    rc = -ESTALE;
    Fail(failure, "code_dir is not the directory checked:", args->code_dir, ESTALE);
  }
  if (rc == 0 && (rc = sys::RawOpenTreeClone(code, /*recursive=*/true)) < 0) {
    Fail(failure, "open_tree(code_dir, OPEN_TREE_CLONE | AT_RECURSIVE)", args->code_dir, -rc);
  }
  ::syscall(SYS_close, code);
  if (rc < 0) return 1;
  args->code_tree = rc;
  // Private: a mount made later below code_dir on the host does not reach Z.
  rc = sys::RawMountSetattrFd(args->code_tree, /*recursive=*/true,
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, MS_PRIVATE);
  if (rc < 0) return Fail(failure, "mount_setattr(code_dir, ro, nosuid, nodev)", -rc);
  return 0;
}

// Opens `path` (in the current root) for mounting on; -errno if it cannot.
int OpenTarget(const char* path) {
  const int fd =
      static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  return fd < 0 ? -errno : fd;
}

// Moves detached `tree` onto `path` and closes it.
int MoveOnto(HelperFailure* failure, int tree, const char* path) {
  const int target = OpenTarget(path);
  int rc = target < 0 ? target : sys::RawMoveMountOnto(tree, target);
  if (target >= 0) ::syscall(SYS_close, target);
  ::syscall(SYS_close, tree);
  return rc < 0 ? Fail(failure, "move_mount onto", path, -rc) : 0;
}

// A masked directory: an empty read-only tmpfs.
int MaskDirectory(HelperFailure* failure, int target, const char* path) {
  const int context = sys::RawFsopen("tmpfs");
  if (context < 0) return Fail(failure, "fsopen(tmpfs) to mask", path, -context);
  int rc = sys::RawFsconfigString(context, "mode", "555");
  if (rc == 0) rc = sys::RawFsconfigString(context, "size", "4k");
  if (rc == 0) rc = sys::RawFsconfigCreate(context);
  if (rc == 0) {
    rc = sys::RawFsmount(
        context, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  }
  ::syscall(SYS_close, context);
  if (rc < 0) return Fail(failure, "tmpfs to mask", path, -rc);
  const int mask = rc;
  rc = sys::RawMoveMountOnto(mask, target);
  ::syscall(SYS_close, mask);
  return rc < 0 ? Fail(failure, "move_mount of a mask onto", path, -rc) : 0;
}

// `source` cloned (with what is mounted below it when `recursive`), set to `attrs` and
// private, and moved onto `target`.
int BindOnto(HelperFailure* failure, int source, bool recursive, unsigned long long attrs,
             int target, const char* path) {
  const int tree = sys::RawOpenTreeClone(source, recursive);
  if (tree < 0) return Fail(failure, "open_tree(OPEN_TREE_CLONE) for", path, -tree);
  int rc = sys::RawMountSetattrFd(tree, recursive, attrs, MS_PRIVATE);
  if (rc == 0) rc = sys::RawMoveMountOnto(tree, target);
  ::syscall(SYS_close, tree);
  return rc < 0 ? Fail(failure, "read-only bind onto", path, -rc) : 0;
}

// Opens Z's /dev/null, checked to be the null device: the source of the file masks.
int OpenNull(HelperFailure* failure) {
  const int null = OpenTarget("/dev/null");
  if (null < 0) return -Fail(failure, "open(/dev/null)", -null);
  struct stat st;
  const int err = ::syscall(SYS_fstat, null, &st) != 0                  ? errno
                  : !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3) ? ENODEV
                                                                        : 0;
  if (err == 0) return null;
  ::syscall(SYS_close, null);
  return -Fail(failure, "fstat(/dev/null): the null device", err);
}

// One of kMaskedProcPaths: a directory gets an empty read-only tmpfs, a file `null`
// bound read-only. Skipped where this kernel has no such file.
int MaskProcPath(HelperFailure* failure, int null, const char* path) {
  const int target = OpenTarget(path);
  if (target == -ENOENT) return 0;
  if (target < 0) return Fail(failure, "open a /proc path to mask", path, -target);
  struct stat st;
  int rc;
  if (::syscall(SYS_fstat, target, &st) != 0) {
    rc = Fail(failure, "fstat a /proc path to mask", path, errno);
  } else if (S_ISDIR(st.st_mode)) {
    rc = MaskDirectory(failure, target, path);
  } else {
    rc = BindOnto(failure, null, /*recursive=*/false,
                  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, target, path);
  }
  ::syscall(SYS_close, target);
  return rc;
}

// The launch's masks (core/mount_plan.h), over the proc just mounted on Z's /proc.
int MaskProc(HelperFailure* failure) {
  const int null = OpenNull(failure);
  if (null < 0) return 1;
  int rc = 0;
  for (const char* path : kMaskedProcPaths) {
    if ((rc = MaskProcPath(failure, null, path)) != 0) break;
  }
  ::syscall(SYS_close, null);
  for (const char* path : kReadOnlyProcPaths) {
    if (rc != 0) break;
    const int target = OpenTarget(path);
    if (target == -ENOENT) continue;
    if (target < 0) return Fail(failure, "open a /proc path to make read-only", path, -target);
    rc = BindOnto(failure, target, /*recursive=*/true,
                  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                  target, path);
    ::syscall(SYS_close, target);
  }
  return rc;
}

// The helper's child, in Z's pid namespace (so the proc it makes is that namespace's).
int MountInZygote(void* raw) {
  auto* args = static_cast<SealArgs*>(raw);
  HelperFailure* failure = &args->failure;
  // Made here, still in the helper's copy of the caller's mounts: the proc the kernel
  // checks a new one against (mount_too_revealing) is the caller's, fully visible.
  const int context = sys::RawFsopen("proc");
  if (context < 0) return Fail(failure, "fsopen(proc)", -context);
  int rc = sys::RawFsconfigCreate(context);
  if (rc < 0) return Fail(failure, "fsconfig(proc, create)", -rc);
  const int proc =
      sys::RawFsmount(context, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  if (proc < 0) return Fail(failure, "fsmount(proc)", -proc);
  // Also sets this child's root and working directory to Z's root.
  if ((rc = sys::RawSetns(args->zygote_mnt, CLONE_NEWNS)) < 0) {
    return Fail(failure, "setns(Z's mount namespace)", -rc);
  }
  // The masks go on before anything else: a failure from here leaves Z refused (and the
  // caller kills it), and Z waits until it is told, so it never looks at /proc unmasked.
  if (MoveOnto(failure, proc, "/proc") != 0 || MaskProc(failure) != 0) return 1;
  if (MoveOnto(failure, args->code_tree, "/code") != 0 ||
      MoveOnto(failure, args->tmp_tree, "/tmp") != 0 ||
      MoveOnto(failure, args->shm_tree, "/dev/shm") != 0) {
    return 1;
  }
  if ((rc = sys::RawSetns(args->zygote_net, CLONE_NEWNET)) < 0) {
    return Fail(failure, "setns(Z's net namespace)", -rc);
  }
  if ((rc = sys::RawSetInterfaceUp("lo")) < 0) return Fail(failure, "set lo up", -rc);
  return 0;
}

// The helper child.
int SealZygote(void* raw) {
  auto* args = static_cast<SealArgs*>(raw);
  HelperFailure* failure = &args->failure;
  int rc;
  if (args->runtime_user >= 0 && (rc = sys::RawSetns(args->runtime_user, CLONE_NEWUSER)) < 0) {
    return Fail(failure, "setns(R)", -rc);
  }
  // A copy of the caller's mounts, owned by R (where the helper may make mounts), in which
  // nothing is mounted: code_dir is cloned there (as the caller's own uid: code_dir must be
  // reachable by it) and the tmpfs and proc are made there, all detached and private.
  if ((rc = sys::RawUnshare(CLONE_NEWNS)) < 0) return Fail(failure, "unshare(CLONE_NEWNS)", -rc);
  if (CloneCode(args) != 0) return 1;
  // F gives every capability to its owner in R: become it (Z's uid, the only one its map
  // can name), keeping the capabilities setns gave in R.
  uid_t owner = 0;
  if (internal::BecomeOwnerOf(failure, args->zygote_user, &owner) != 0) return 1;
  if ((args->tmp_tree = internal::MakeTmpfs(failure, args->tmp_size)) < 0 ||
      (args->shm_tree = internal::MakeTmpfs(failure, args->shm_size)) < 0) {
    return 1;
  }
  if (internal::WriteIdentityMaps(failure, args->zygote_proc, owner, args->gid) != 0) return 1;
  // For the child only: the helper itself stays where it is.
  if ((rc = sys::RawSetns(args->zygote_pid, CLONE_NEWPID)) < 0) {
    return Fail(failure, "setns(Z's pid namespace)", -rc);
  }
  if (internal::RunNested(failure, MountInZygote, args, args->mounter_stack) != 0) return 1;
  // The limits are the writer's namespace's, looked up when a file is opened.
  if ((rc = sys::RawSetns(args->zygote_user, CLONE_NEWUSER)) < 0) {
    return Fail(failure, "setns(F)", -rc);
  }
  for (size_t i = 0; i < args->limits; ++i) {
    if (!internal::WriteFileAt(args->proc_sys_user, args->limit_names[i], args->limit_values[i])) {
      return Fail(failure, "write F's limit", args->limit_names[i], errno);
    }
  }
  return 0;
}

// ---- Parent side.

// The namespace files of Z, opened through /proc/<Z>.
struct ZygoteFiles {
  UniqueFd proc, user, mnt, pid, net, ipc, uts;
  std::string status;  // /proc/<Z>/status
};

absl::StatusOr<UniqueFd> OpenAt(int dir, const char* name) {
  UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("open(Z's ", name, ")"));
  return fd;
}

absl::StatusOr<ZygoteFiles> OpenZygote(pid_t zygote) {
  ZygoteFiles files;
  const std::string dir = absl::StrCat("/proc/", zygote);
  files.proc = UniqueFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!files.proc.valid()) return ErrnoStatus(errno, absl::StrCat("open(", dir, ")"));
  const int proc = files.proc.get();
  ZYGO_ASSIGN_OR_RETURN(files.user, OpenAt(proc, "ns/user"));
  ZYGO_ASSIGN_OR_RETURN(files.mnt, OpenAt(proc, "ns/mnt"));
  ZYGO_ASSIGN_OR_RETURN(files.pid, OpenAt(proc, "ns/pid"));
  ZYGO_ASSIGN_OR_RETURN(files.net, OpenAt(proc, "ns/net"));
  ZYGO_ASSIGN_OR_RETURN(files.ipc, OpenAt(proc, "ns/ipc"));
  ZYGO_ASSIGN_OR_RETURN(files.uts, OpenAt(proc, "ns/uts"));
  ZYGO_ASSIGN_OR_RETURN(UniqueFd status, OpenAt(proc, "status"));
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(status.get(), buffer, sizeof(buffer))) > 0) files.status.append(buffer, n);
  if (n < 0) return ErrnoStatus(errno, "read(Z's status)");
  return files;
}

// Z's pid in its own pid namespace: the last NSpid of its status.
std::string InnermostPid(const std::string& status) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, "NSpid:")) continue;
    std::vector<absl::string_view> pids = absl::StrSplit(line, '\t', absl::SkipWhitespace());
    return pids.empty() ? "" : std::string(pids.back());
  }
  return "";
}

absl::Status CheckZygote(const ZygoteFiles& z, int runtime_user, int runtime_pid) {
  ZYGO_ASSIGN_OR_RETURN(struct stat r, internal::StatOf(runtime_user, "R"));
  ZYGO_ASSIGN_OR_RETURN(struct stat f, internal::StatOf(z.user.get(), "Z's ns/user"));
  ZYGO_RETURN_IF_ERROR(internal::CheckMadeIn(
      z.user.get(), r,
      "the function zygote is not in a user namespace made directly in the runtime sandbox's"));
  const std::pair<const UniqueFd*, const char*> owned[] = {
      {&z.mnt, "mount"}, {&z.pid, "pid"}, {&z.net, "net"}, {&z.ipc, "ipc"}, {&z.uts, "uts"}};
  for (const auto& [ns, name] : owned) {
    ZYGO_RETURN_IF_ERROR(internal::CheckOwnedBy(
        ns->get(), f,
        absl::StrCat("the function zygote is not in a ", name,
                     " namespace of its own (one its own user namespace owns)")));
  }
  ZYGO_ASSIGN_OR_RETURN(struct stat runtime_pid_ns, internal::StatOf(runtime_pid, "R's ns/pid"));
  ZYGO_RETURN_IF_ERROR(internal::CheckMadeIn(
      z.pid.get(), runtime_pid_ns,
      "the function zygote's pid namespace was not made directly in the runtime sandbox's"));
  if (const std::string pid = InnermostPid(z.status); pid != "1") {
    return absl::FailedPreconditionError(absl::StrCat("the function zygote is pid ",
                                                      pid.empty() ? "(none)" : pid,
                                                      " of its pid namespace, not 1"));
  }
  return absl::OkStatus();
}

absl::Status PrepareLimits(const std::vector<UsernsLimit>& limits, SealArgs* args) {
  if (limits.size() > kMaxLimits) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxLimits, " userns limits"));
  }
  for (const UsernsLimit& limit : limits) {
    absl::string_view name = limit.path;
    if (!absl::ConsumePrefix(&name, kProcSysUser) || name.empty() || absl::StrContains(name, '/')) {
      return absl::InvalidArgumentError(
          absl::StrCat("userns limit ", limit.path, " is not a file of ", kProcSysUser));
    }
    args->limit_names[args->limits] = limit.path.c_str() + sizeof(kProcSysUser) - 1;
    args->limit_values[args->limits] = limit.value.c_str();
    ++args->limits;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SealForkedZygote(const ForkedZygoteTarget& target,
                              const ForkedZygoteOptions& options) {
  if (options.code_dir.empty() || options.code_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("code_dir '", options.code_dir, "' must be an absolute path"));
  }
  SealArgs args;
  ZYGO_RETURN_IF_ERROR(PrepareLimits(options.userns_limits, &args));
  // Before the opens too, so a process already gone is named as that and not as a missing
  // /proc entry.
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.runtime_init_pidfd, "the runtime sandbox"));
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.zygote_pidfd, "the function zygote"));
  const std::string init_dir = absl::StrCat("/proc/", target.runtime_init);
  UniqueFd runtime_user(::open((init_dir + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!runtime_user.valid())
    return ErrnoStatus(errno, absl::StrCat("open(", init_dir, "/ns/user)"));
  UniqueFd runtime_pid(::open((init_dir + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC));
  if (!runtime_pid.valid()) return ErrnoStatus(errno, absl::StrCat("open(", init_dir, "/ns/pid)"));
  ZYGO_ASSIGN_OR_RETURN(ZygoteFiles zygote, OpenZygote(target.zygote));
  // Opened by pid, so only now alive-checked: a pid reused before the opens fails here.
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.runtime_init_pidfd, "the runtime sandbox"));
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.zygote_pidfd, "the function zygote"));
  ZYGO_RETURN_IF_ERROR(CheckZygote(zygote, runtime_user.get(), runtime_pid.get()));

  // Ours: the sandbox's /proc/sys is read-only.
  UniqueFd proc_sys_user(::open(kProcSysUser, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc_sys_user.valid()) return ErrnoStatus(errno, "open(/proc/sys/user)");
  ZYGO_ASSIGN_OR_RETURN(struct stat r, internal::StatOf(runtime_user.get(), "R"));
  ZYGO_ASSIGN_OR_RETURN(const bool in_r, internal::CallerIsIn(r));
  ZYGO_ASSIGN_OR_RETURN(internal::HelperStack mounter_stack, internal::HelperStack::Map());
  args.runtime_user = in_r ? -1 : runtime_user.get();
  args.zygote_proc = zygote.proc.get();
  args.zygote_user = zygote.user.get();
  args.zygote_mnt = zygote.mnt.get();
  args.zygote_pid = zygote.pid.get();
  args.zygote_net = zygote.net.get();
  args.proc_sys_user = proc_sys_user.get();
  args.code_dir = options.code_dir.c_str();
  args.code_dev = static_cast<dev_t>(options.code_dev);
  args.code_ino = static_cast<ino_t>(options.code_ino);
  args.tmp_size = internal::TmpfsSizeFor(options.tmp_bytes);
  args.shm_size = internal::TmpfsSizeFor(options.shm_bytes);
  args.gid = options.gid;
  args.mounter_stack = mounter_stack.top();
  absl::Status sealed = internal::RunHelper(SealZygote, &args, args.failure, "the sealing helper");
  if (!sealed.ok()) {
    return absl::Status(
        args.code_changed ? absl::StatusCode::kFailedPrecondition : sealed.code(),
        absl::StrCat(args.code_changed ? "the function's code directory changed since it was "
                                         "checked (refused): "
                                       : "cannot seal the function zygote: ",
                     sealed.message()));
  }
  return absl::OkStatus();
}

}  // namespace zygo::core
