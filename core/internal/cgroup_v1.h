// The cgroup v1 driver: one new directory per v1 hierarchy (memory, pids, cpu and,
// when it is a separate hierarchy, cpuacct); the parent moves the child in.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_V1_H_
#define ZYGO_CORE_INTERNAL_CGROUP_V1_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cgroup.h"

namespace zygo::core::internal {

// One v1 line of /proc/self/cgroup: "N:controller[,controller]:/path".
struct V1Membership {
  int hierarchy_id = 0;
  std::vector<std::string> controllers;
  std::string path;
};

// Parses the v1 lines of a /proc/<pid>/cgroup file. Skips the v2 line ("0::/path") and
// named hierarchies without controllers ("N:name=systemd:/"). Fails on a malformed line.
absl::StatusOr<std::vector<V1Membership>> ParseV1SelfCgroup(absl::string_view content);

// Where one controller's new cgroups go.
struct V1Hierarchy {
  int id = 0;              // Hierarchy id from /proc/self/cgroup: same id, same directory.
  std::string parent_dir;  // Mount directory joined with the caller's own cgroup path.
  std::string mount_dir;   // The mount directory itself (where stale cgroups are looked for).
};

struct V1Layout {
  V1Hierarchy memory;
  V1Hierarchy pids;
  V1Hierarchy cpu;
  std::optional<V1Hierarchy> cpuacct;  // Absent: CPU usage reads as 0.
};

// Finds the memory, pids, cpu (and optional cpuacct) hierarchies below
// options.mount_root for the caller's cgroups in options.self_cgroup_file. A
// controller's hierarchy is `<root>/<controller>` (or `<root>/<ctrl,ctrl>`), a directory
// with cgroup.procs and without cgroup.controllers (which only cgroup2 has). Fails with
// FailedPrecondition naming each missing controller. Reads only; parent side.
absl::StatusOr<V1Layout> ResolveV1Layout(const CgroupProbeOptions& options);

// The v1 hierarchies below `mount_root` that hold memory, pids, cpu or cpuacct: each
// directory "<root>/<controller[,controller]>" with cgroup.procs and without
// cgroup.controllers (the symlinks beside them, such as cpu -> cpu,cpuacct, name the same
// ones). Unlike ResolveV1Layout it asks nothing about the caller's own cgroups. Reads only;
// parent side.
std::vector<std::string> V1ControllerMounts(const std::string& mount_root);

class CgroupV1Driver : public CgroupDriver {
 public:
  // `name_prefix` must not contain '/'.
  CgroupV1Driver(V1Layout layout, std::string name_prefix);

  CgroupVersion version() const override { return CgroupVersion::kV1; }
  // Below the caller's own cgroups: v1 has no rule against processes beside child cgroups.
  const CgroupPlacement& placement() const override { return placement_; }
  absl::Status Prepare() override { return absl::OkStatus(); }

  // mkdirs "<prefix><pid>-<n>" in every hierarchy of the layout and writes the limits
  // (a zero field leaves that controller unlimited). Needs write access to the
  // caller's own cgroup directories (root, or a delegated subtree). Keeps the kernel
  // OOM killer on so that OOM kills happen and are counted.
  absl::StatusOr<std::unique_ptr<Cgroup>> Create(const CgroupLimits& limits) override;

  // In every hierarchy of the layout (one directory per cgroup and hierarchy).
  std::vector<StaleCgroup> SweepStale(const StaleSweepOptions& options) override;

  const V1Layout& layout() const { return layout_; }

 private:
  V1Layout layout_;
  std::string name_prefix_;
  CgroupPlacement placement_;
};

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_V1_H_
