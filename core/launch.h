// Runs a Plan: makes the cgroup, clones the sandbox child into new namespaces, writes
// its id maps, enforces the deadline, forwards signals, and tears everything down.
// Parent side.
#ifndef ZYGO_CORE_LAUNCH_H_
#define ZYGO_CORE_LAUNCH_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/outcome.h"
#include "core/plan.h"

namespace zygo::core {

// Runs `plan` to completion and says how it ended. `driver` may be null when the host
// has no usable cgroups. Returns an error Status only when Zygo could not start the
// sandbox at all (cgroup refused, clone failed); failures inside the child come back
// as an Outcome with status setup_error. Every cgroup, pipe and process it made is
// gone when it returns.
//
// `before_release`, when set, runs in the parent after the child's id maps are written
// and before it is let go, with the child's pid: its namespaces exist but nothing runs in
// them yet (the network hookup: firewall, pasta, resolver). An error from it kills the
// child and is returned as Launch's error.
using BeforeRelease = std::function<absl::Status(pid_t pid)>;
absl::StatusOr<Outcome> Launch(const Plan& plan, CgroupDriver* driver,
                               const BeforeRelease& before_release = nullptr);

// A process zygo-init killed for a call from a foreign ABI (i386, x32), as it happens.
struct SeccompKillNotice {
  pid_t sandbox_pid = 0;  // as the sandbox's pid namespace numbers it
  int syscall = 0;
  std::string name;  // "getpid", or "syscall N"
  std::string arch;  // "i386", "x32"
};

// What a long-lived sandbox (the supervisor's zygotes) needs beyond a one-shot run.
struct LaunchOptions {
  BeforeRelease before_release;
  // Parent fds that become the command's fds 3, 4, ... (everything else above 2 is
  // closed at exec, and the init closes its copies so the command alone holds them).
  std::vector<int> inherit_fds;
  // Parent fds for the command's stdin, stdout and stderr; -1 keeps this process's own.
  int stdio_fds[3] = {-1, -1, -1};
  // A cgroup the caller made and owns (e.g. to nest per-request cgroups in it): the
  // sandbox is put there instead of in a new one, and Launch does not remove it.
  Cgroup* cgroup = nullptr;
  // Forward SIGINT/SIGTERM/... sent to this process to the sandbox (zygo run). A daemon
  // running many sandboxes says false.
  bool forward_signals = true;
  // Ignore plan.spec.timeout_ms: the caller ends the sandbox (through on_started's pidfd).
  bool no_deadline = false;
  // Called once the sandbox runs, on Launch's thread, with the init's pid, a pidfd of it
  // (valid until Launch returns: dup it to keep it), and the sandbox's cgroup (null without
  // one; valid until Launch returns). Launch keeps supervising after it returns.
  std::function<void(pid_t pid, int pidfd, Cgroup* cgroup)> on_started;
  // Called on Launch's thread for every process zygo-init kills for a foreign-ABI call
  // while the sandbox runs (a zygote's requests; a one-shot run has it in its Outcome).
  std::function<void(const SeccompKillNotice& notice)> on_seccomp_kill;
};
absl::StatusOr<Outcome> Launch(const Plan& plan, CgroupDriver* driver,
                               const LaunchOptions& options);

}  // namespace zygo::core

#endif  // ZYGO_CORE_LAUNCH_H_
