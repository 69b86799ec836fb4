// The Plan as JSON, for `zygo run --dry-run --json`.
#ifndef ZYGO_CORE_PLAN_JSON_H_
#define ZYGO_CORE_PLAN_JSON_H_

#include <string>

#include "core/plan.h"

namespace zygo::core {

// What a run would use on this host for the limits.
struct CgroupChoice {
  std::string driver = "none";     // "v1", "v2" or "none"
  std::string placement = "none";  // CgroupPlacementName
  std::string detail;              // where, and why there; or why no cgroup can be made
};

std::string PlanToJson(const Plan& plan, const CgroupChoice& cgroup);

}  // namespace zygo::core

#endif  // ZYGO_CORE_PLAN_JSON_H_
