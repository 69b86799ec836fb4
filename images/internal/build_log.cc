#include "images/internal/build_log.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace zygo::images {

std::string BuildFailureLine(const std::string& log, absl::string_view error_prefix) {
  std::string last, error;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    last = std::string(line);
    if (absl::StartsWith(line, error_prefix)) error = last;
  }
  std::string chosen = error.empty() ? last : error;
  return chosen.size() > 300 ? chosen.substr(0, 300) + "..." : chosen;
}

}  // namespace zygo::images
