// The processes under one process (through /proc/*/stat parent links) and their
// proportional set size, for `zygo bench density`. Parent side; reading another user's
// smaps_rollup needs the same user or CAP_SYS_PTRACE (root).
#ifndef ZYGO_BENCH_COMMON_PROCESS_TREE_H_
#define ZYGO_BENCH_COMMON_PROCESS_TREE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::bench {

// Every live descendant of `root` (children, their children, ...), not `root` itself,
// sorted. A process that exits during the scan may be missing.
std::vector<pid_t> Descendants(pid_t root);

// The Pss lines of /proc/PID/smaps_rollup, in kB. Pss_Anon and Pss_File need Linux 5.9;
// before that they read 0.
struct Pss {
  int64_t kb = 0;       // Pss
  int64_t anon_kb = 0;  // Pss_Anon: heap, stacks, copied-on-write pages
  int64_t file_kb = 0;  // Pss_File: mapped files (libraries, the interpreter)
};

// NotFound when the process is gone.
absl::StatusOr<Pss> ReadPss(pid_t pid);

struct PssTotal {
  Pss sum;
  int processes = 0;  // whose PSS was read
  int vanished = 0;   // listed but gone before their PSS could be read
};

// The sum of ReadPss over `pids`; a process that has exited meanwhile is counted in
// `vanished`, any other read failure is an error.
absl::StatusOr<PssTotal> SumPss(const std::vector<pid_t>& pids);

// CPU seconds used by `root` and its live descendants, each with the children it has reaped
// (utime + stime + cutime + cstime of /proc/PID/stat); nullopt when `root` is gone.
std::optional<double> TreeCpuSeconds(pid_t root);

// CPU seconds used by `pid` itself (utime + stime), without its children; nullopt when it
// is gone. TreeCpuSeconds(root) less this is what root's descendants used (OwnCpuSeconds
// of host_info.h is the calling process's, children included).
std::optional<double> ProcessCpuSeconds(pid_t pid);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_PROCESS_TREE_H_
