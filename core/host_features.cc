#include "core/host_features.h"

#include <errno.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/sys/landlock.h"
#include "core/base/sys/mount_api.h"
#include "core/base/sys/process.h"
#include "core/internal/cgroup_fs.h"
#include "core/internal/cgroup_v1.h"
#include "core/internal/cgroup_v2.h"

namespace zygo::core {
namespace {

// A probe's answer: its arguments are ones the kernel must reject, so anything but ENOSYS
// or EPERM (a filter's) means the call is there.
SyscallState StateOf(long rc) {
  if (rc == -ENOSYS) return SyscallState::kNoSys;
  if (rc == -EPERM) return SyscallState::kRefused;
  return SyscallState::kAvailable;
}

CgroupHierarchy HierarchyAt(const std::string& mount_root) {
  if (internal::IsCgroup2Root(mount_root)) return CgroupHierarchy::kUnified;
  const bool v1 = !internal::V1ControllerMounts(mount_root).empty();
  // systemd's hybrid layout: its own cgroup2 mount beside the v1 controllers.
  if (v1 && internal::IsCgroup2Root(absl::StrCat(mount_root, "/unified"))) {
    return CgroupHierarchy::kHybrid;
  }
  return v1 ? CgroupHierarchy::kV1 : CgroupHierarchy::kNone;
}

}  // namespace

CgroupFacts ReadCgroupFacts(const CgroupProbeOptions& options) {
  CgroupFacts facts;
  facts.hierarchy = HierarchyAt(options.mount_root);
  facts.systemd = !options.systemd_marker.empty() && internal::IsDirectory(options.systemd_marker);
  return facts;
}

HostFeatures ReadHostFeatures() {
  HostFeatures features;
  features.clone3 = StateOf(base::sys::RawClone3Probe());
  // EINVAL is the kernel refusing the fd of a flag it knows; E2BIG an older clone_args.
  features.clone_into_cgroup = features.clone3 == SyscallState::kAvailable &&
                               base::sys::RawCloneIntoCgroupProbe() == -EINVAL;
  features.mount_setattr = StateOf(base::sys::RawMountSetattrProbe());
  // EOPNOTSUPP (built but not enabled at boot), ENOSYS and a filter's EPERM all mean none.
  const int abi = base::sys::RawLandlockAbiVersion();
  features.landlock_abi = abi < 0 ? 0 : abi;
  features.cgroup = ReadCgroupFacts(CgroupProbeOptions{});
  return features;
}

const HostFeatures& ProbeHostFeatures() {
  // A function-local static is initialised once, and callers racing to it wait for that.
  static const HostFeatures* const features = new HostFeatures(ReadHostFeatures());
  return *features;
}

}  // namespace zygo::core
