// The throwaway child each `zygo doctor` check makes its attempt in: cloned with the
// namespaces (and on cgroup v2 the cgroup) the check asks for, given id maps and whatever
// the parent sets up, then let go to try one thing and report what happened. Nothing it
// does reaches the host: its namespaces, and anything made inside them, go with it.
#ifndef ZYGO_CLI_DOCTOR_CHILD_H_
#define ZYGO_CLI_DOCTOR_CHILD_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace zygo::cli {

// What the child's attempt came to, written into one fixed record (no allocation in the
// child). `step` is the check's own numbering of where it stopped (0: it all worked),
// `err` the errno there.
struct ChildReport {
  int32_t step = 0;
  int32_t err = 0;
  int64_t value = 0;  // a count or flag the check defines
  int64_t value2 = 0;
  char text[2048] = {};  // a file the child read (its /proc/self/cgroup), NUL-terminated
};

struct ChildAttempt {
  // CLONE_NEW* flags for clone3; 0 for a plain child.
  uint64_t clone_flags = 0;
  // cgroup v2: an O_DIRECTORY fd the child is born in (CLONE_INTO_CGROUP); -1: none.
  int cgroup_fd = -1;
  // With CLONE_NEWUSER: map root inside to the caller, as a sandbox's maps do
  // (core/identity.h), before the child goes.
  bool write_id_maps = false;
  // Parent side, once the maps are written and before the child goes (attach it to a v1
  // cgroup, hook up its network). An error kills the child and is returned.
  std::function<absl::Status(pid_t pid)> before_go;
  // Child side, after "go": the attempt, filling `report`. Must be async-signal-safe (no
  // allocation, no locks, no logging): the child is a copy of this process.
  void (*body)(const void* arg, ChildReport* report) = nullptr;
  const void* arg = nullptr;
  // The child is killed after this long (a hung attempt is a failed one).
  int timeout_ms = 2000;
};

struct ChildOutcome {
  bool reported = false;   // false: the child died before it wrote its report, or
  bool timed_out = false;  // it had not written it by the attempt's deadline (then killed)
  ChildReport report;
  int wait_status = 0;
};

// Runs `attempt` and waits for the child. Errors are the parent's own (clone3 refused,
// the maps or before_go failed); what the child found is in the outcome. Parent side;
// the caller must be single-threaded (the child runs code copied from it).
absl::StatusOr<ChildOutcome> RunChildAttempt(const ChildAttempt& attempt);

// Why an outcome has no report: "gave no report in time and was killed", or "died: ...".
std::string DescribeUnreported(const ChildOutcome& outcome);

// Why an attempt did not get through every step: the parent's error, the child's death,
// or the step it stopped at, named by steps[step] with its errno's name; nullopt when
// it did (step 0).
std::optional<std::string> AttemptFailure(const absl::StatusOr<ChildOutcome>& outcome,
                                          const char* const* steps);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_CHILD_H_
