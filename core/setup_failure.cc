#include "core/setup_failure.h"

#include <errno.h>
#include <string.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"
#include "core/launch_step.h"
#include "core/mount_plan.h"

namespace zygo::core {
namespace {

// Docker and systemd-nspawn mount read-only or masking mounts over parts of a container's
// /proc by default. A mount namespace owned by a new user namespace gets them locked, and
// the kernel then refuses it a proc of its own (fs/namespace.c, mnt_already_visible), so
// neither /proc/sys/user nor the sandbox's /proc can be had.
constexpr char kMaskedProc[] =
    "the sandbox cannot have a /proc of its own here: parts of this /proc are mounted over "
    "(a read-only /proc/sys, masked files), as docker and systemd-nspawn make a container's "
    "/proc by default, and the kernel lets a new user namespace mount proc only where the "
    "whole of /proc is visible. Fix: run the container with --security-opt "
    "systempaths=unconfined (docker; podman: --security-opt unmask=ALL), with "
    "SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 (systemd-nspawn), or --privileged";

// Whether anything is mounted over a part of this process's /proc (the one empty directory
// proc keeps for mounts, binfmt_misc, does not count: the kernel allows that one).
bool ProcIsMountedOver() {
  absl::StatusOr<std::string> mountinfo = base::sys::ReadFile("/proc/self/mountinfo");
  if (!mountinfo.ok()) return false;
  for (absl::string_view line : absl::StrSplit(*mountinfo, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 5) continue;
    absl::string_view mount_point = fields[4];
    if (absl::StartsWith(mount_point, "/proc/") && mount_point != "/proc/sys/fs/binfmt_misc") {
      return true;
    }
  }
  return false;
}

bool IsMaskedProcFailure(const Plan& plan, const base::ChildRecord& failure) {
  auto step = static_cast<LaunchStep>(failure.step);
  bool proc_step = false;
  if (step == LaunchStep::kUsernsLimits) {
    proc_step = failure.err == EROFS;
  } else if (step == LaunchStep::kMountOp && failure.err == EPERM && failure.value >= 0 &&
             static_cast<size_t>(failure.value) < plan.mounts.ops.size()) {
    proc_step = plan.mounts.ops[failure.value].kind == MountOpKind::kProc;
  }
  return proc_step && ProcIsMountedOver();
}

}  // namespace

std::string DescribeSetupFailure(const Plan& plan, const base::ChildRecord& failure) {
  if (IsMaskedProcFailure(plan, failure)) return kMaskedProc;
  auto step = static_cast<LaunchStep>(failure.step);
  std::string what = StepName(step);
  if (step == LaunchStep::kMountOp && failure.value >= 0 &&
      static_cast<size_t>(failure.value) < plan.mounts.ops.size()) {
    const MountOp& op = plan.mounts.ops[failure.value];
    if (op.kind == MountOpKind::kBindChecked && (failure.err == ELOOP || failure.err == ESTALE)) {
      std::string source = op.source.substr(sizeof(kOldRoot) - 1);
      return absl::StrCat(
          "refused to mount ", source, " at ", op.sandbox_path.empty() ? "/" : op.sandbox_path,
          ": it changed after zygo checked it (",
          failure.err == ELOOP ? "a part of the path is now a symlink" : "it is now another file",
          "); nothing was mounted and the command did not run");
    }
    what = absl::StrCat("mount plan: ", op.source.empty() ? "" : op.source + " -> ",
                        op.sandbox_path.empty() ? "/" : op.sandbox_path);
  }
  return absl::StrCat("sandbox setup failed at ", what, ": ", strerror(failure.err), " (",
                      base::ErrnoName(failure.err), ")");
}

}  // namespace zygo::core
