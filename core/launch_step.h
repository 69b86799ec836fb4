// The named steps a sandbox child runs between clone and exec. A failing step is
// reported to the parent as (step, errno) and printed with StepName().
#ifndef ZYGO_CORE_LAUNCH_STEP_H_
#define ZYGO_CORE_LAUNCH_STEP_H_

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
  kForkCommand,
  kExecPipe,
  kInitFds,      // placing the fds zygo-init starts with (core/init/init_layout.h)
  kExecInit,     // execveat of zygo-init
  kInitSignals,  // zygo-init's signalfd
};

// A short human name for the step ("pivot_root into the image root").
const char* StepName(LaunchStep step);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LAUNCH_STEP_H_
