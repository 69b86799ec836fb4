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
LandlockPlan BuildLandlockPlan(int abi, const std::vector<std::string>& writable_paths);

// Child side, after pivot_root and no_new_privs. A rule whose path is missing is skipped.
ChildFailure ApplyLandlockInChild(const LandlockPlan& plan);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LANDLOCK_H_
