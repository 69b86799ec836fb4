// The one line a sandbox's failed setup step becomes: which step, and why, in the words
// that say what to change where a cause is known.
#ifndef ZYGO_CORE_SETUP_FAILURE_H_
#define ZYGO_CORE_SETUP_FAILURE_H_

#include <string>

#include "core/base/child_report.h"
#include "core/plan.h"

namespace zygo::core {

std::string DescribeSetupFailure(const Plan& plan, const base::ChildRecord& failure);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SETUP_FAILURE_H_
