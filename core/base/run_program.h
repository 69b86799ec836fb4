// Running a short-lived program and collecting what it printed: the helpers zygo asks
// (zygo-scope) and the tools doctor asks (systemd-detect-virt). Parent side.
#ifndef ZYGO_CORE_BASE_RUN_PROGRAM_H_
#define ZYGO_CORE_BASE_RUN_PROGRAM_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::base {

struct ProgramRun {
  int wait_status = 0;  // waitpid's
  std::string output;   // what it printed, up to the limit
  bool exited_zero() const;
};

// Runs argv (argv[0] searched in PATH when it has no '/') with stdin on /dev/null and
// stdout captured, stderr too when `with_stderr` (else /dev/null), keeping at most `limit`
// bytes, and waits for it. The error is that it could not be started.
absl::StatusOr<ProgramRun> RunProgram(const std::vector<std::string>& argv, bool with_stderr,
                                      size_t limit = 4096);

}  // namespace zygo::base

#endif  // ZYGO_CORE_BASE_RUN_PROGRAM_H_
