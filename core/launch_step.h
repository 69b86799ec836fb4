// The named steps a sandbox child runs between clone and exec. A failing step is
// reported to the parent as (step, errno) and printed with StepName().
#ifndef ZYGO_CORE_LAUNCH_STEP_H_
#define ZYGO_CORE_LAUNCH_STEP_H_

#include "core/init/init_layout.h"

namespace zygo::core {

enum class LaunchStep : int {
  kWaitForParent = 1,
  kDeathSignal,
  kCgroupAttach,
  kCgroupNamespace,
  kUsernsLimits,
  kMountPrivate,
  kMountStaging,
  kPivotToStaging,
  kMountOp,  // one entry of the mount plan; the parent knows which from the index
  kPivotToRoot,
  kDetachOldRoot,
  kRootReadOnly,
  kHostname,
  kLoopback,
  kRlimits,
  kWorkdir,
  kSetGroups,
  kSetIds,
  kDropCapabilities,
  kNoNewPrivs,
  kLandlock,
  kSeccomp,
  kSession,
  kInitFds,   // placing the fds zygo-init starts with (core/init/init_layout.h)
  kExecInit,  // execveat of zygo-init
  // zygo-init's own steps, numbered by its contract.
  kForkCommand = static_cast<int>(init::InitStep::kForkCommand),
  kExecPipe = static_cast<int>(init::InitStep::kExecPipe),
  kInitSignals = static_cast<int>(init::InitStep::kInitSignals),
};

// A short human name for the step ("pivot_root into the image root").
const char* StepName(LaunchStep step);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LAUNCH_STEP_H_
