// Where the cgroup v2 driver makes sandbox cgroups, and the moves that needs. zygo always
// lives in a cgroup of its own (a login session, a service, a container's root), and
// cgroup v2 lets a cgroup with processes hand no memory, pids or cpu to its children; so
// the sandboxes' parent must be a cgroup without processes: the root cgroup, the cgroup
// zygo was alone in once zygo has moved into a leaf of it, a transient systemd scope
// (plus that leaf step), or the nearest ancestor zygo may write that holds no process.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_V2_PLACEMENT_H_
#define ZYGO_CORE_INTERNAL_CGROUP_V2_PLACEMENT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/internal/systemd_manager.h"

namespace zygo::core::internal {

// The decision, made by reading only.
struct V2PlacementPlan {
  CgroupPlacement placement;
  std::string own_dir;                 // zygo's cgroup when the plan was made
  std::optional<SystemdManager> asks;  // kSystemdScope: whom to ask
  std::string scope_helper;            // kSystemdScope: zygo-scope, which asks
};

// Sandboxes directly below `parent_dir`, a cgroup that holds no process and that the
// caller set up (tests, and callers that made their own parent).
V2PlacementPlan FixedV2Placement(const std::string& parent_dir);

// Decides from the tree under options.mount_root, this process's cgroup and whether
// systemd runs the host (`facts`, of the same tree). In order:
// the root cgroup; alone in a cgroup it may manage (leaf step); systemd running (a scope
// from the system manager for root, the user's manager for others); no systemd: the
// nearest manageable ancestor without processes, or, at the top of a container's own
// cgroup namespace, that top once its processes have moved to a child. FailedPrecondition
// naming what is missing and the fixes when none applies.
absl::StatusOr<V2PlacementPlan> PlanV2Placement(const CgroupProbeOptions& options,
                                                const CgroupFacts& facts);

// A plan carried out. Prepare() moves this process (once); the destructor moves it back
// into the cgroup it came from and removes the leaf (a scope systemd removes by itself
// once it is empty, when this process exits).
class V2Placement {
 public:
  V2Placement(V2PlacementPlan plan, CgroupProbeOptions options);
  V2Placement(const V2Placement&) = delete;
  V2Placement& operator=(const V2Placement&) = delete;
  ~V2Placement();

  // Idempotent: later calls return the first call's result.
  absl::Status Prepare();
  const CgroupPlacement& placement() const { return plan_.placement; }

 private:
  absl::Status Carry();
  absl::Status JoinSystemdScope();
  absl::Status EmptyContainerRoot();
  absl::Status MoveIntoLeaf(const std::string& dir);
  void Undo();

  V2PlacementPlan plan_;
  CgroupProbeOptions options_;
  std::optional<absl::Status> prepared_;
  std::string leaf_dir_;                // the leaf this process moved into
  std::string left_dir_;                // the cgroup it left for it
  std::vector<std::string> turned_on_;  // controllers switched on in left_dir_
};

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_V2_PLACEMENT_H_
