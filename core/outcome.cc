#include "core/outcome.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/atomic_write.h"
#include "nlohmann/json.hpp"

namespace zygo::core {
namespace {

double Round2(double ms) { return std::round(ms * 100) / 100; }

}  // namespace

const char* OutcomeStatusName(OutcomeStatus status) {
  switch (status) {
    case OutcomeStatus::kOk:
      return "ok";
    case OutcomeStatus::kNonzeroExit:
      return "nonzero_exit";
    case OutcomeStatus::kSignaled:
      return "signaled";
    case OutcomeStatus::kTimeout:
      return "timeout";
    case OutcomeStatus::kOom:
      return "oom";
    case OutcomeStatus::kPidsLimit:
      return "pids_limit";
    case OutcomeStatus::kSeccompKilled:
      return "seccomp_killed";
    case OutcomeStatus::kSetupError:
      return "setup_error";
    case OutcomeStatus::kHandlerError:
      return "handler_error";
  }
  return "unknown";
}

Outcome SetupErrorOutcome(const absl::Status& status, double plan_ms) {
  Outcome outcome;
  outcome.status = OutcomeStatus::kSetupError;
  outcome.exit_code = 125;
  outcome.error = std::string(status.message());
  outcome.plan_ms = plan_ms;
  return outcome;
}

std::string OutcomeToJson(const Outcome& o) {
  nlohmann::ordered_json json = {
      {"status", OutcomeStatusName(o.status)},
      {"exit_code", o.exit_code},
      {"signal", o.signal},
      {"timed_out", o.timed_out},
      {"oom_killed", o.oom_killed},
      {"peak_rss_kb", o.peak_rss_kb},
      {"cpu_user_ms", o.cpu_user_ms},
      {"cpu_sys_ms", o.cpu_sys_ms},
      {"wall_ms", Round2(o.wall_ms)},
      {"timings",
       {{"plan_ms", Round2(o.plan_ms)},
        {"start_ms", Round2(o.start_ms)},
        {"run_ms", Round2(o.run_ms)}}},
      {"limits",
       {{"memory_bytes", o.memory_bytes},
        {"cpus", o.cpus},
        {"pids", o.pids_limit},
        {"timeout_ms", o.timeout_ms}}},
      {"limits_applied", o.limits_applied},
      {"cgroup_driver", o.cgroup_driver},
      {"cgroup_placement", o.cgroup_placement},
      {"network", {{"mode", o.net_mode}, {"allow", o.allow}}},
  };
  if (!o.error.empty()) json["error"] = o.error;
  if (o.seccomp_kill.has_value()) {
    json["seccomp_kill"] = {{"syscall", o.seccomp_kill->name},
                            {"number", o.seccomp_kill->syscall},
                            {"arch", o.seccomp_kill->arch},
                            {"command", o.seccomp_kill->command}};
  }
  if (o.denials_explained) {
    nlohmann::ordered_json denials = nlohmann::ordered_json::array();
    for (const Outcome::SeccompDenial& denial : o.seccomp_denials) {
      denials.push_back({{"syscall", denial.name}, {"count", denial.count}});
    }
    json["seccomp_denials"] = denials;
  }
  return json.dump(2) + "\n";
}

absl::Status WriteOutcomeFile(const std::string& path, const Outcome& outcome) {
  absl::Status written = base::sys::WriteFileAtomically(path, OutcomeToJson(outcome));
  if (written.ok()) return written;
  return absl::Status(written.code(),
                      absl::StrCat("write outcome ", path, ": ", written.message()));
}

}  // namespace zygo::core
