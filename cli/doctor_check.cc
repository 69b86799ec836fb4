#include "cli/doctor_check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zygo::cli {

const char* CheckStatusText(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kMissing:
      return "MISSING";
    case CheckStatus::kNotApplicable:
      return "n/a";
  }
  return "?";
}

const char* CheckStatusJson(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kMissing:
      return "missing";
    case CheckStatus::kNotApplicable:
      return "not_applicable";
  }
  return "?";
}

std::string FormatCheckLine(const DoctorCheck& check) {
  std::string line =
      absl::StrFormat("%-16s %-4s %s", check.label, CheckStatusText(check.status), check.detail);
  if (!check.fix.empty()) absl::StrAppend(&line, "; fix: ", check.fix);
  return line;
}

bool RunCanWork(const std::vector<DoctorCheck>& checks) {
  for (const DoctorCheck& check : checks) {
    if (check.needed && check.status != CheckStatus::kOk) return false;
  }
  return true;
}

nlohmann::json ChecksToJson(const std::vector<DoctorCheck>& checks) {
  nlohmann::json list = nlohmann::json::array();
  for (const DoctorCheck& check : checks) {
    list.push_back({{"id", check.id},
                    {"label", check.label},
                    {"status", CheckStatusJson(check.status)},
                    {"needed", check.needed},
                    {"needed_for", check.needed_for},
                    {"detail", check.detail},
                    {"fix", check.fix},
                    {"ms", check.ms},
                    {"facts", check.facts}});
  }
  const bool can_work = RunCanWork(checks);
  return {{"schema", 1},
          {"zygo_run_can_work", can_work},
          {"exit_code", can_work ? 0 : 1},
          {"checks", list}};
}

}  // namespace zygo::cli
