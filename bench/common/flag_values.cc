#include "bench/common/flag_values.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zygo::bench {

absl::StatusOr<FlagValue> TakeFlagValue(int argc, char** argv, int* i,
                                        bool (*takes_value)(const std::string& name),
                                        absl::string_view bench) {
  std::string arg = argv[*i];
  FlagValue flag{arg, ""};
  bool has_value = false;
  if (size_t eq = arg.find('='); absl::StartsWith(arg, "--") && eq != std::string::npos) {
    flag.name = arg.substr(0, eq);
    flag.value = arg.substr(eq + 1);
    has_value = true;
  }
  if (!takes_value(flag.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown flag or argument '", arg, "' (see zygo bench ", bench, " --help)"));
  }
  if (!has_value) {
    if (*i + 1 >= argc)
      return absl::InvalidArgumentError(absl::StrCat(flag.name, " needs a value"));
    flag.value = argv[++*i];
  }
  return flag;
}

absl::StatusOr<int> ParseRunCount(absl::string_view flag, absl::string_view text, int min) {
  constexpr int kMaxRuns = 1'000'000;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > kMaxRuns) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "': expected a whole number from ", min, " to ", kMaxRuns));
  }
  return value;
}

}  // namespace zygo::bench
