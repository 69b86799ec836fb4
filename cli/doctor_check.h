// One line of `zygo doctor`: what was attempted on this host, whether it worked, what
// depends on it and what to do when it did not; printed as text or as JSON.
#ifndef ZYGO_CLI_DOCTOR_CHECK_H_
#define ZYGO_CLI_DOCTOR_CHECK_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace zygo::cli {

enum class CheckStatus {
  kOk,             // the attempt worked
  kMissing,        // it failed: `detail` says how, `fix` what to do
  kNotApplicable,  // nothing to attempt on this host (e.g. a cgroup2 setting on v1)
};

// "ok", "MISSING", "n/a" (the text column); JSON uses "ok", "missing", "not_applicable".
const char* CheckStatusText(CheckStatus status);
const char* CheckStatusJson(CheckStatus status);

struct DoctorCheck {
  std::string id;     // stable JSON key: "user_namespaces"
  std::string label;  // the text column: "user namespaces"
  CheckStatus status = CheckStatus::kOk;
  // Needed by every `zygo run` (a missing one makes doctor exit 1), or an optional layer
  // or feature (`needed_for` says which).
  bool needed = false;
  std::string needed_for;  // "every run", "--net egress and --net full", ...
  std::string detail;
  std::string fix;                                  // empty unless missing
  nlohmann::json facts = nlohmann::json::object();  // what the attempt saw, per check
  double ms = 0;  // how long the attempt took (lines of one attempt share it)
};

// "label            ok   detail" (and "; fix: ..." when there is one), no newline.
std::string FormatCheckLine(const DoctorCheck& check);

// The stable --json document (schema in docs/zygo-run.md#zygo-doctor):
// {"schema": 1, "zygo_run_can_work": B, "exit_code": N, "checks": [{"id", "label",
//  "status", "needed", "needed_for", "detail", "fix", "ms", "facts"}, ...]}.
nlohmann::json ChecksToJson(const std::vector<DoctorCheck>& checks);

// True when every needed check is ok: `zygo run` can work here.
bool RunCanWork(const std::vector<DoctorCheck>& checks);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_CHECK_H_
