// The cgroup v2 driver: one directory below the caller's own cgroup, held open so that
// clone3(CLONE_INTO_CGROUP) starts the child inside it.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_V2_H_
#define ZYGO_CORE_INTERNAL_CGROUP_V2_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cgroup.h"

namespace zygo::core::internal {

// The path of the v2 line ("0::/path") of a /proc/<pid>/cgroup file; NotFound without
// one, InvalidArgument when it is malformed.
absl::StatusOr<std::string> ParseV2SelfCgroup(absl::string_view content);

// True when `root` is a cgroup2 mount (statfs f_type CGROUP2_SUPER_MAGIC). A directory
// that is not a cgroup mount of either version counts too when it has
// cgroup.controllers at its top: on a real host only a cgroup2 root has that file
// (a hybrid host's /sys/fs/cgroup is a tmpfs without it), and it lets unit tests
// build fake trees. Parent side; reads only.
bool IsCgroup2Root(const std::string& root);

// The caller's own cgroup directory below options.mount_root, after checking that its
// cgroup.controllers offers memory, pids and cpu. FailedPrecondition names what is
// missing. Reads only; parent side.
absl::StatusOr<std::string> ResolveV2Parent(const CgroupProbeOptions& options);

class CgroupV2Driver : public CgroupDriver {
 public:
  // `parent_dir`: the caller's own cgroup directory, below the cgroup2 mount `mount_root`;
  // `name_prefix` must not contain '/'.
  CgroupV2Driver(std::string parent_dir, std::string name_prefix,
                 std::string mount_root = "/sys/fs/cgroup");

  CgroupVersion version() const override { return CgroupVersion::kV2; }

  // Enables +memory +pids +cpu in the parent's cgroup.subtree_control when they are not
  // enabled yet (the one write outside our own directory, and only to the caller's own
  // cgroup), mkdirs "<prefix><pid>-<n>", writes the limits (a zero field leaves that
  // controller at "max") and opens the directory for clone_into_fd(). Needs write
  // access to the caller's own cgroup (root, or a delegated subtree), and that cgroup
  // must hold no processes unless the controllers are already enabled
  // (the no-internal-process rule).
  absl::StatusOr<std::unique_ptr<Cgroup>> Create(const CgroupLimits& limits) override;

  std::vector<StaleCgroup> SweepStale(const StaleSweepOptions& options) override;

  const std::string& parent_dir() const { return parent_dir_; }

 private:
  std::string parent_dir_;
  std::string name_prefix_;
  std::string mount_root_;
};

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_V2_H_
