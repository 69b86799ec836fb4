// How a sandbox run ended, as a typed result separate from Status, and its JSON form
// for --outcome FILE.
#ifndef ZYGO_CORE_OUTCOME_H_
#define ZYGO_CORE_OUTCOME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zygo::core {

enum class OutcomeStatus {
  kOk,             // exited 0
  kNonzeroExit,    // exited with another code
  kSignaled,       // a signal ended it (not Zygo's, not the OOM killer's)
  kTimeout,        // Zygo's deadline killed it
  kOom,            // the kernel's OOM killer killed it inside the memory limit
  kPidsLimit,      // it hit the pids limit (fork failed with EAGAIN)
  kSeccompKilled,  // a process of it was killed for a call the seccomp filter refuses
  kSetupError,     // Zygo could not start it (or the command was not found/executable)
  kHandlerError,   // a warm function's handler raised (the supervisor's requests only)
};

const char* OutcomeStatusName(OutcomeStatus status);

struct Outcome {
  OutcomeStatus status = OutcomeStatus::kSetupError;
  int exit_code = 125;  // what `zygo run` exits with
  int signal = 0;
  bool timed_out = false;
  bool oom_killed = false;
  int64_t peak_rss_kb = 0;
  int64_t cpu_user_ms = 0;
  int64_t cpu_sys_ms = 0;
  double wall_ms = 0;
  double plan_ms = 0;
  double start_ms = 0;  // clone until the command's execve succeeded
  double run_ms = 0;    // execve until the sandbox's init was reaped
  std::string error;    // for kSetupError: which step failed and why

  // The call a process was killed for (kSeccompKilled): a foreign ABI's (i386, x32).
  struct SeccompKill {
    int syscall = 0;
    std::string name;      // "mmap", or "syscall N" when libseccomp does not know it
    std::string arch;      // "i386", "x32"
    bool command = false;  // the command itself (else a process it started)
  };
  std::optional<SeccompKill> seccomp_kill;
  // --explain-denials: every call the allowlist refused, by name, with how many times.
  struct SeccompDenial {
    std::string name;
    int64_t count = 0;
  };
  bool denials_explained = false;
  std::vector<SeccompDenial> seccomp_denials;

  // The limits as applied: memory, cpus and pids only when the sandbox had a cgroup
  // (limits_applied); without one (--allow-unlimited) they are 0.
  bool limits_applied = false;
  int64_t memory_bytes = 0;
  double cpus = 0;
  int64_t pids_limit = 0;
  int64_t timeout_ms = 0;
  std::string cgroup_driver = "none";
  std::string cgroup_placement = "none";  // CgroupPlacementName, when limits_applied

  // The network as applied: "none", "egress", "full" or "host", and egress's allowlist.
  std::string net_mode = "none";
  std::vector<std::string> allow;
};

// A setup error: exit code 125 and the message.
Outcome SetupErrorOutcome(const absl::Status& status, double plan_ms = 0);

// Pretty JSON with every field.
std::string OutcomeToJson(const Outcome& outcome);

// Writes the JSON atomically (temp file in the same directory, then rename).
absl::Status WriteOutcomeFile(const std::string& path, const Outcome& outcome);

}  // namespace zygo::core

#endif  // ZYGO_CORE_OUTCOME_H_
