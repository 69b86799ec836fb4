// Naming one process for good: a pid alone is soon reused, a pid with its start time is not.
#ifndef ZYGO_CORE_BASE_SYS_PROCESS_START_TIME_H_
#define ZYGO_CORE_BASE_SYS_PROCESS_START_TIME_H_

#include <sys/types.h>

#include <string>

namespace zygo::base::sys {

// Field 22 of /proc/<pid>/stat, the start time in clock ticks since boot, as written
// there; "0" when it cannot be read (no such process).
std::string ProcessStartTime(pid_t pid);

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_PROCESS_START_TIME_H_
