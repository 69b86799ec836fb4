// Resource limits set with setrlimit in the child: no core dumps, a bounded fd table, and
// small shares of the per-user counters a sandbox shares with the host user it maps to.
#ifndef ZYGO_CORE_RLIMITS_H_
#define ZYGO_CORE_RLIMITS_H_

#include <sys/resource.h>

#include <vector>

#include "core/child_failure.h"

namespace zygo::core {

struct Rlimit {
  int resource;
  const char* name;
  rlim_t soft;
  rlim_t hard;
};

// Parent side: the limits every sandbox gets, each lowered to the caller's own hard limit.
std::vector<Rlimit> DefaultRlimits();

// Child side.
ChildFailure ApplyRlimitsInChild(const std::vector<Rlimit>& limits);

}  // namespace zygo::core

#endif  // ZYGO_CORE_RLIMITS_H_
