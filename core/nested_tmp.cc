#include "core/nested_tmp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/mount_api.h"
#include "core/base/sys/namespaces.h"
#include "core/base/unique_fd.h"
#include "core/internal/namespace_helper.h"

namespace zygo::core {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;
using internal::Fail;

// What the helper child needs, all prepared by the parent; the child writes only
// `failure`. The parent waits (CLONE_VFORK) before it reads it.
struct HelperArgs {
  int sandbox_user = -1;  // -1: the caller is in that user namespace already
  int spare_user = -1;
  int spare_mnt = -1;
  int spare_proc = -1;     // /proc/<spare>, O_PATH
  int proc_sys_user = -1;  // the caller's /proc/sys/user, O_PATH
  internal::TmpfsSize size;
  uint32_t gid = 0;
  internal::HelperFailure failure;
};

// The helper child (core/internal/namespace_helper.h: raw syscalls only).
int MountInSpare(void* raw) {
  auto* args = static_cast<HelperArgs*>(raw);
  internal::HelperFailure* failure = &args->failure;
  if (args->sandbox_user >= 0) {
    if (const int rc = base::sys::RawSetns(args->sandbox_user, CLONE_NEWUSER); rc < 0) {
      return Fail(failure, "setns(the sandbox's user namespace)", -rc);
    }
  }
  // The spare's user namespace gives every capability to its owner in the parent
  // namespace: become that owner, keeping the capabilities setns gave in the sandbox's.
  uid_t owner = 0;
  if (internal::BecomeOwnerOf(failure, args->spare_user, &owner) != 0) return 1;
  if (const int rc = base::sys::RawSetns(args->spare_mnt, CLONE_NEWNS); rc < 0) {
    return Fail(failure, "setns(the spare's mount namespace)", -rc);
  }
  const int tmp = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, "/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (tmp < 0) return Fail(failure, "open(/tmp)", errno);
  const int mount = internal::MakeTmpfs(failure, args->size);
  if (mount < 0) return 1;
  if (const int rc = base::sys::RawMoveMountOnto(mount, tmp); rc < 0) {
    return Fail(failure, "move_mount(/tmp)", -rc);
  }
  if (internal::WriteIdentityMaps(failure, args->spare_proc, owner, args->gid) != 0) return 1;
  // No user namespace within the spare's: its request gets none of the capabilities a new
  // one gives, nor the kernel surface, nor a share of the sandbox's budget of them. The
  // limit is the writer's namespace's, looked up when the file is opened.
  if (const int rc = base::sys::RawSetns(args->spare_user, CLONE_NEWUSER); rc < 0) {
    return Fail(failure, "setns(the spare's user namespace)", -rc);
  }
  if (!internal::WriteFileAt(args->proc_sys_user, "max_user_namespaces", "0\n")) {
    return Fail(failure, "write(max_user_namespaces)", errno);
  }
  return 0;
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
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.sandbox_init_pidfd, "the sandbox"));
  ZYGO_RETURN_IF_ERROR(internal::CheckAlive(target.spare_pidfd, "the spare"));

  ZYGO_ASSIGN_OR_RETURN(struct stat sandbox_ns,
                        internal::StatOf(sandbox_user.get(), "sandbox ns/user"));
  ZYGO_ASSIGN_OR_RETURN(struct stat spare_ns, internal::StatOf(spare_user.get(), "spare ns/user"));
  ZYGO_RETURN_IF_ERROR(internal::CheckMadeIn(
      spare_user.get(), sandbox_ns,
      "the spare is not in a user namespace of its own made in the sandbox's (its "
      "unshare(CLONE_NEWUSER) failed: the host must allow nested user namespaces)"));
  ZYGO_RETURN_IF_ERROR(internal::CheckOwnedBy(spare_mnt.get(), spare_ns,
                                              "the spare is not in a mount namespace of its own"));

  // Ours, not the sandbox's: the sandbox's /proc/sys is read-only.
  UniqueFd proc_sys_user(::open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc_sys_user.valid()) return ErrnoStatus(errno, "open(/proc/sys/user)");
  HelperArgs args;
  args.proc_sys_user = proc_sys_user.get();
  ZYGO_ASSIGN_OR_RETURN(const bool in_sandbox_ns, internal::CallerIsIn(sandbox_ns));
  args.sandbox_user = in_sandbox_ns ? -1 : sandbox_user.get();
  args.spare_user = spare_user.get();
  args.spare_mnt = spare_mnt.get();
  args.spare_proc = spare_proc.get();
  args.size = internal::TmpfsSizeFor(options.size_bytes);
  args.gid = options.gid;
  absl::Status mounted = internal::RunHelper(MountInSpare, &args, args.failure, "the /tmp helper");
  if (!mounted.ok()) {
    return absl::Status(mounted.code(),
                        absl::StrCat("cannot give the spare its own /tmp: ", mounted.message()));
  }
  return absl::OkStatus();
}

}  // namespace zygo::core
