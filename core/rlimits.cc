#include "core/rlimits.h"

#include <errno.h>

#include <cstddef>

namespace zygo::core {

std::vector<Rlimit> DefaultRlimits() {
  return {
      {RLIMIT_CORE, "core", 0, 0},  // a core file is a copy of the sandbox's memory
      {RLIMIT_NOFILE, "nofile", 1024, 4096},
      {RLIMIT_MEMLOCK, "memlock", 64 << 10, 64 << 10},
  };
}

ChildFailure ApplyRlimitsInChild(const std::vector<Rlimit>& limits) {
  for (size_t i = 0; i < limits.size(); ++i) {
    struct rlimit value = {limits[i].soft, limits[i].hard};
    if (setrlimit(limits[i].resource, &value) != 0) {
      return {LaunchStep::kRlimits, errno, static_cast<int>(i)};
    }
  }
  return ChildFailure::Ok();
}

}  // namespace zygo::core
