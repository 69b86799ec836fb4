// What a child-side facility returns: ok, or the step that failed with its errno.
#ifndef ZYGO_CORE_CHILD_FAILURE_H_
#define ZYGO_CORE_CHILD_FAILURE_H_

#include "core/launch_step.h"

namespace zygo::core {

struct ChildFailure {
  LaunchStep step{};
  int err = 0;     // 0 means success
  int detail = 0;  // which item of the step (e.g. mount plan index)

  bool ok() const { return err == 0; }
  static ChildFailure Ok() { return {}; }
};

// Returns a failure for `step` when `rc` (0 or -errno) is negative.
inline ChildFailure CheckRc(LaunchStep step, int rc, int detail = 0) {
  return rc < 0 ? ChildFailure{step, -rc, detail} : ChildFailure::Ok();
}

}  // namespace zygo::core

#endif  // ZYGO_CORE_CHILD_FAILURE_H_
