// A helper process a bench runs beside what it measures (the supervisor, the peer):
// started with its output in a log file, told to stop with SIGTERM, and killed by the
// kernel if the bench itself dies first. Parent side; no privileges.
#ifndef ZYGO_BENCH_COMMON_BACKGROUND_PROCESS_H_
#define ZYGO_BENCH_COMMON_BACKGROUND_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::bench {

// Starts `argv` (argv[0] an absolute path) with stdin on /dev/null and stdout and stderr
// appended to `log_path`, in its own process group, with SIGTERM as its parent-death
// signal. Returns its pid.
absl::StatusOr<pid_t> StartBackground(const std::vector<std::string>& argv,
                                      const std::string& log_path);

// True while `pid` (our child) has not exited; reaps it when it has, storing its wait
// status in `*wait_status`.
bool StillRunning(pid_t pid, int* wait_status);

// Sends SIGTERM and waits up to `grace_ms` for the exit; after that SIGKILL to the
// whole process group and DeadlineExceeded. Returns the wait status otherwise.
absl::StatusOr<int> StopBackground(pid_t pid, int grace_ms);

// The last `bytes` of a text file ("" when unreadable), for error messages.
std::string FileTail(const std::string& path, size_t bytes);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_BACKGROUND_PROCESS_H_
