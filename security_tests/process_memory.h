// What the test process (root, on the host) can read of another process: whether its
// memory or environment holds some bytes, and which processes descend from a pid. The
// oracle for "nothing of the parent is in the sandbox": looked at from outside, where
// nothing stops the reading.
#ifndef ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_
#define ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::testing {

// Whether any readable mapping of `pid` holds `needle`; an error when its memory could not
// be read at all (it is gone, or this process may not read it).
absl::StatusOr<bool> MemoryContains(pid_t pid, const std::string& needle);

// Whether /proc/PID/environ holds `needle`.
absl::StatusOr<bool> EnvironmentContains(pid_t pid, const std::string& needle);

// argv[0] of `pid` ("" when it is gone).
std::string Argv0(pid_t pid);

// Every live descendant of `pid` (children, grandchildren, ...), by /proc/PID/stat's ppid.
std::vector<pid_t> Descendants(pid_t pid);

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_
