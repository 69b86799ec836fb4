// Landlock for the sandbox: read and execute everywhere under /, write only where the
// mount plan made writable places, and (ABI 6+) no signals or abstract unix sockets
// across the sandbox's edge. Plan in the parent, apply in the child.
#ifndef ZYGO_CORE_LANDLOCK_H_
#define ZYGO_CORE_LANDLOCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/child_failure.h"

namespace zygo::core {

struct LandlockRule {
  std::string path;  // as the sandboxed program sees it
  uint64_t access = 0;
};

struct LandlockPlan {
  int abi = 0;  // 0: the kernel has no Landlock; nothing is applied
  uint64_t handled_fs = 0;
  uint64_t scoped = 0;
  std::vector<LandlockRule> rules;
};

// Parent side: the rules for a sandbox whose writable places are `writable_paths`, for
// the kernel's Landlock ABI `abi` (ProbeHostFeatures().landlock_abi; 0: none).
// `nested_mounts`: mounts made later inside the sandbox (a warm spare's own /tmp) must be
// usable. Landlock never checks a mount point's own rule (a path walk skips from a mount's
// root to its mount point's parent), so only a rule on "/" reaches such a mount: "/" then
// gets every right but making device nodes and device ioctls, and each process that gets
// such a mount stacks a domain of its own with the narrow rules (agents/isolation).
LandlockPlan BuildLandlockPlan(int abi, const std::vector<std::string>& writable_paths,
                               bool nested_mounts = false);

// Child side, after pivot_root and no_new_privs. A rule whose path is missing is skipped.
ChildFailure ApplyLandlockInChild(const LandlockPlan& plan);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LANDLOCK_H_
