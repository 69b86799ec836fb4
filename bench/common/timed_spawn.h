// Runs one command to completion and times it from spawn to reap, for benchmarks.
// Parent side only; needs nothing beyond what the command itself needs.
#ifndef ZYGO_BENCH_COMMON_TIMED_SPAWN_H_
#define ZYGO_BENCH_COMMON_TIMED_SPAWN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::bench {

struct Command {
  std::vector<std::string> argv;  // argv[0] is an absolute path; no PATH lookup
  // The whole environment, KEY=VALUE. Used only when `inherit_env` is false.
  std::vector<std::string> env;
  bool inherit_env = true;
  std::string workdir;  // empty: the caller's own
};

// Quotes a command line for messages, so a failed run can be repeated by hand.
std::string CommandLine(const Command& command);

struct TimedRun {
  int wait_status = 0;  // as waitpid(2) reports it
  double ms = 0;        // CLOCK_MONOTONIC from before posix_spawn to after waitpid
};

// Spawns `command` with stdin, stdout and stderr on /dev/null (so no pipe or terminal
// is part of what is measured) and waits for it. A command still running after
// `deadline_ms` is killed, and that is an error. An error means the run could not be
// made or awaited; a command that ran and failed is a TimedRun with its status.
absl::StatusOr<TimedRun> RunTimed(const Command& command, int deadline_ms);

struct CapturedRun {
  int wait_status = 0;     // as waitpid(2) reports it
  std::string out;         // everything it wrote to stdout
  double cpu_seconds = 0;  // its user + system time (and its reaped children's), from wait4(2)
};

// Runs `command` with stdout on a pipe (stdin and stderr on /dev/null), reads it to the
// end and reaps the command. A command still running after `deadline_ms` is killed, and
// that is an error; a command that ran and failed is a CapturedRun with its status.
absl::StatusOr<CapturedRun> RunCaptured(const Command& command, int deadline_ms);

// Runs `command` untimed and returns its stdout (stderr to /dev/null), e.g. for
// `bwrap --version`. An error unless it exits 0.
absl::StatusOr<std::string> CaptureStdout(const Command& command);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_TIMED_SPAWN_H_
