#include "core/launch_step.h"

namespace zygo::core {

const char* StepName(LaunchStep step) {
  switch (step) {
    case LaunchStep::kWaitForParent:
      return "wait for the parent's id maps and cgroup";
    case LaunchStep::kDeathSignal:
      return "prctl(PR_SET_PDEATHSIG)";
    case LaunchStep::kCgroupAttach:
      return "write(cgroup tasks, \"0\")";
    case LaunchStep::kCgroupNamespace:
      return "unshare(CLONE_NEWCGROUP)";
    case LaunchStep::kUsernsLimits:
      return "write /proc/sys/user limits of the sandbox's user namespace";
    case LaunchStep::kMountPrivate:
      return "mount(/, MS_REC|MS_PRIVATE)";
    case LaunchStep::kMountStaging:
      return "mount(tmpfs -> /tmp staging)";
    case LaunchStep::kPivotToStaging:
      return "pivot_root into the staging tmpfs";
    case LaunchStep::kMountOp:
      return "mount plan";
    case LaunchStep::kPivotToRoot:
      return "pivot_root into the image root";
    case LaunchStep::kDetachOldRoot:
      return "umount2(old root, MNT_DETACH)";
    case LaunchStep::kRootReadOnly:
      return "mount_setattr(/, MOUNT_ATTR_RDONLY)";
    case LaunchStep::kLoopback:
      return "bring up lo";
    case LaunchStep::kHostname:
      return "sethostname";
    case LaunchStep::kRlimits:
      return "setrlimit";
    case LaunchStep::kWorkdir:
      return "chdir(workdir)";
    case LaunchStep::kSetGroups:
      return "setgroups(0, NULL)";
    case LaunchStep::kSetIds:
      return "setresgid/setresuid";
    case LaunchStep::kDropCapabilities:
      return "drop capabilities";
    case LaunchStep::kNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS)";
    case LaunchStep::kLandlock:
      return "landlock_restrict_self";
    case LaunchStep::kSeccomp:
      return "seccomp(SECCOMP_SET_MODE_FILTER)";
    case LaunchStep::kSession:
      return "setsid";
    case LaunchStep::kForkCommand:
      return "fork the command";
    case LaunchStep::kExecPipe:
      return "pipe2 for exec status";
    case LaunchStep::kInitFds:
      return "place zygo-init's fds";
    case LaunchStep::kExecInit:
      return "execveat(zygo-init)";
    case LaunchStep::kInitSignals:
      return "signalfd in zygo-init";
  }
  return "unknown step";
}

}  // namespace zygo::core
