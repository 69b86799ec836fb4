// A Plan is a validated, immutable Spec: everything the child will do, computed in
// the parent so every error is reported before any namespace exists.
#ifndef ZYGO_CORE_PLAN_H_
#define ZYGO_CORE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/identity.h"
#include "core/landlock.h"
#include "core/mount_plan.h"
#include "core/rlimits.h"
#include "core/seccomp_policy.h"
#include "core/spec.h"
#include "core/userns_limits.h"

namespace zygo::core {

struct Plan {
  Spec spec;
  MountPlan mounts;
  IdentityPlan identity;
  LandlockPlan landlock;
  SeccompPrograms seccomp;
  std::vector<Rlimit> rlimits;
  std::vector<UsernsLimit> userns_limits;
  CgroupLimits cgroup_limits;
  std::vector<std::string> env;              // the whole environment, KEY=VALUE
  std::vector<std::string> exec_candidates;  // argv[0] resolved against the image's PATH
  uint64_t namespaces = 0;                   // CLONE_NEW* flags
};

// Validates `spec` and builds its Plan. Parent side; needs no privileges.
absl::StatusOr<Plan> BuildPlan(const Spec& spec);

// The image's default environment (PATH, HOME, HOSTNAME) under the -e values.
std::vector<std::string> BuildEnvironment(const Spec& spec);

}  // namespace zygo::core

#endif  // ZYGO_CORE_PLAN_H_
