// Picks the cgroup driver this host supports: v2 on a cgroup2 mount, else v1 when the
// memory, pids and cpu hierarchies are there.
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/internal/cgroup_v1.h"
#include "core/internal/cgroup_v2.h"

namespace zygo::core {

absl::StatusOr<std::unique_ptr<CgroupDriver>> ProbeCgroupDriver(const CgroupProbeOptions& options) {
  // v2 first: on a pure v2 host there are no v1 hierarchies to fall back to, and on a
  // hybrid host (v1 controllers plus a v2 mount at <root>/unified) the root is a tmpfs.
  if (internal::IsCgroup2Root(options.mount_root)) {
    absl::StatusOr<std::string> parent = internal::ResolveV2Parent(options);
    if (!parent.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cgroup v2 at ", options.mount_root, " is unusable: ", parent.status().message()));
    }
    return std::unique_ptr<CgroupDriver>(std::make_unique<internal::CgroupV2Driver>(
        *std::move(parent), options.name_prefix, options.mount_root));
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

}  // namespace zygo::core
