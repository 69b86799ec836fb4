// The Plan as JSON, for `zygo run --dry-run --json`.
#ifndef ZYGO_CORE_PLAN_JSON_H_
#define ZYGO_CORE_PLAN_JSON_H_

#include <string>

#include "core/plan.h"

namespace zygo::core {

// `cgroup_driver` is "v1", "v2" or "none" (what a run would use on this host).
std::string PlanToJson(const Plan& plan, const std::string& cgroup_driver);

}  // namespace zygo::core

#endif  // ZYGO_CORE_PLAN_JSON_H_
