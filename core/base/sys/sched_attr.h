// A shorter scheduler slice for a latency-sensitive process (EEVDF's custom slice, Linux
// 6.12+; sched_setattr, which glibc 2.36 does not wrap). A task that wakes with a short
// slice may preempt a CPU-bound neighbour at once instead of waiting out the neighbour's
// slice (1.4 ms by default on these 2-CPU VMs); its share of the CPU is unchanged, so no
// privilege is needed. Threads and children made afterwards inherit it, across execve too.
#ifndef ZYGO_CORE_BASE_SYS_SCHED_ATTR_H_
#define ZYGO_CORE_BASE_SYS_SCHED_ATTR_H_

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace zygo::base::sys {

// The kernel clamps a custom slice to [0.1 ms, 100 ms]; 0 asks for its default again.
inline constexpr uint64_t kShortSliceNs = 100'000;
// For work nobody waits on (a zygote's forks, a request's child tearing itself down): the
// longest slice puts its deadline last, so a task waking at the default slice (the
// caller's client, say) is picked first and may preempt it, instead of queueing behind a
// fork or an exit for ~0.5-1 ms. Its share of the CPU is unchanged.
inline constexpr uint64_t kBackgroundSliceNs = 100'000'000;

// The kernel's struct sched_attr, first version (48 bytes): glibc 2.36 has no wrapper,
// and <linux/sched/types.h> clashes with <sched.h>.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // SCHED_OTHER: the requested slice, in ns
  uint64_t sched_deadline;
  uint64_t sched_period;
};
static_assert(sizeof(SchedAttr) == 48);

// Asks for `slice_ns` on the calling thread under SCHED_OTHER, keeping its nice value.
// Returns 0 or -errno. Older kernels ignore sched_runtime for SCHED_OTHER (the call
// succeeds and nothing changes); a caller treats any failure as "no shorter slice".
inline int RawRequestSlice(uint64_t slice_ns) {
  SchedAttr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return -errno;
  if (attr.sched_policy != SCHED_OTHER) return -EPERM;  // leave real-time or idle alone
  attr.size = sizeof(attr);
  attr.sched_runtime = slice_ns;
  attr.sched_flags = 0;
  return ::syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : -errno;
}

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_SCHED_ATTR_H_
