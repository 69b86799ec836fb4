// What the test process (root, on the host) can read of another process: whether its
// memory or environment holds some bytes, and which processes descend from a pid. The
// oracle for "nothing of the parent is in the sandbox": looked at from outside, where
// nothing stops the reading.
#ifndef ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_
#define ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::testing {

// How much of a mapping MemoryContainsAny reads at once (its one buffer, beside the
// overlap of the longest needle less one byte).
inline constexpr size_t kMemoryChunkBytes = size_t{1} << 20;

// Whether any readable mapping of `pid` holds any of `needles` (none empty), read once in
// chunks of kMemoryChunkBytes; an error when its memory could not be read at all (it is
// gone, or this process may not read it).
absl::StatusOr<bool> MemoryContainsAny(pid_t pid, const std::vector<std::string>& needles);

// MemoryContainsAny with one needle.
absl::StatusOr<bool> MemoryContains(pid_t pid, const std::string& needle);

// Whether /proc/PID/environ holds `needle`.
absl::StatusOr<bool> EnvironmentContains(pid_t pid, const std::string& needle);

// argv[0] of `pid` ("" when it is gone).
std::string Argv0(pid_t pid);

// Every live process's parent (/proc/PID/status's PPid), by pid: one scan of /proc.
using ProcessParents = std::map<pid_t, pid_t>;
ProcessParents ReadProcessParents();

// Every descendant of `pid` (children, grandchildren, ...) in `parents`.
std::vector<pid_t> DescendantsIn(const ProcessParents& parents, pid_t pid);

// Every live descendant of `pid`: DescendantsIn(ReadProcessParents(), pid).
std::vector<pid_t> Descendants(pid_t pid);

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_PROCESS_MEMORY_H_
