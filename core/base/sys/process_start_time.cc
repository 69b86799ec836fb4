#include "core/base/sys/process_start_time.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/sys/fs.h"

namespace zygo::base::sys {

std::string ProcessStartTime(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return "0";
  size_t paren = stat->rfind(')');  // the command name may hold spaces and ')'
  if (paren == std::string::npos) return "0";
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(*stat).substr(paren + 1), ' ', absl::SkipEmpty());
  return fields.size() > 19 ? std::string(fields[19]) : "0";
}

}  // namespace zygo::base::sys
