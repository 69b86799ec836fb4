// Picks the cgroup driver this host supports: v2 on a cgroup2 mount (with its placement),
// else v1 when the memory, pids and cpu hierarchies are there; and, without a driver, which mounts
// a sweep for stale cgroups walks.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/host_features.h"
#include "core/internal/cgroup_sweep.h"
#include "core/internal/cgroup_v1.h"
#include "core/internal/cgroup_v2.h"

namespace zygo::core {
namespace {

// The host's facts, probed once, where `options` looks at the host's own paths; a unit
// test's fake tree is read afresh.
CgroupFacts FactsFor(const CgroupProbeOptions& options) {
  const CgroupProbeOptions host;
  if (options.mount_root == host.mount_root && options.systemd_marker == host.systemd_marker) {
    return ProbeHostFeatures().cgroup;
  }
  return ReadCgroupFacts(options);
}

}  // namespace

const char* CgroupPlacementName(CgroupPlacementKind kind) {
  switch (kind) {
    case CgroupPlacementKind::kOwnCgroups:
      return "own_cgroups";
    case CgroupPlacementKind::kRootCgroup:
      return "root_cgroup";
    case CgroupPlacementKind::kLeafOfOwnCgroup:
      return "leaf_of_own_cgroup";
    case CgroupPlacementKind::kSystemdScope:
      return "systemd_scope";
    case CgroupPlacementKind::kDelegatedAncestor:
      return "delegated_ancestor";
    case CgroupPlacementKind::kContainerRoot:
      return "container_root";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<CgroupDriver>> ProbeCgroupDriver(const CgroupProbeOptions& options) {
  // v2 first: on a pure v2 host there are no v1 hierarchies to fall back to, and on a
  // hybrid host (v1 controllers plus a v2 mount at <root>/unified) the root is a tmpfs.
  const CgroupFacts facts = FactsFor(options);
  if (facts.hierarchy == CgroupHierarchy::kUnified) {
    absl::StatusOr<internal::V2PlacementPlan> plan = internal::PlanV2Placement(options, facts);
    if (!plan.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("cgroup v2 at ", options.mount_root,
                                                        " is unusable: ", plan.status().message()));
    }
    return std::unique_ptr<CgroupDriver>(
        std::make_unique<internal::CgroupV2Driver>(*std::move(plan), options));
  }
  absl::StatusOr<internal::V1Layout> layout = internal::ResolveV1Layout(options);
  if (!layout.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no usable cgroup driver: ", options.mount_root,
        " is not a cgroup2 mount (no cgroup.controllers), and ", layout.status().message()));
  }
  return std::unique_ptr<CgroupDriver>(
      std::make_unique<internal::CgroupV1Driver>(*std::move(layout), options.name_prefix));
}

absl::Status CannotApplyLimits(const absl::Status& why) {
  // The v2 placement's reasons end with the fixes that fit the host.
  if (absl::StrContains(why.message(), "Fix:")) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot apply the memory/pids/cpu limits: ", why.message()));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot apply the memory/pids/cpu limits: ", why.message(),
      ". Run as root, delegate a cgroup to this user, or pass --allow-unlimited to run "
      "without limits"));
}

absl::StatusOr<std::vector<StaleCgroup>> SweepStaleCgroupsEverywhere(
    const StaleSweepOptions& options, const std::string& mount_root,
    const std::string& name_prefix) {
  StaleSweepOptions everywhere = options;
  everywhere.everywhere = true;
  CgroupProbeOptions where;
  where.mount_root = mount_root;
  if (FactsFor(where).hierarchy == CgroupHierarchy::kUnified) {
    return internal::SweepStaleCgroups(CgroupVersion::kV2, {{mount_root, mount_root}}, name_prefix,
                                       everywhere);
  }
  std::vector<internal::SweepHierarchy> hierarchies;
  for (const std::string& mount : internal::V1ControllerMounts(mount_root)) {
    hierarchies.push_back({mount, mount});
  }
  if (hierarchies.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        mount_root, " is no cgroup2 mount and holds no v1 memory, pids, cpu or cpuacct hierarchy"));
  }
  return internal::SweepStaleCgroups(CgroupVersion::kV1, hierarchies, name_prefix, everywhere);
}

}  // namespace zygo::core
