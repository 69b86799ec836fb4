// The flag grammar every `zygo bench` shares: "--name value" or "--name=value", and
// run counts with bounds.
#ifndef ZYGO_BENCH_COMMON_FLAG_VALUES_H_
#define ZYGO_BENCH_COMMON_FLAG_VALUES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::bench {

struct FlagValue {
  std::string name;   // "--runs"
  std::string value;  // what followed '=' or the next argument
};

// Splits argv[*i] into its name and value, taking the value from argv[*i + 1] (and
// advancing *i) when the flag has no '='. `takes_value` says whether the name takes one.
absl::StatusOr<FlagValue> TakeFlagValue(int argc, char** argv, int* i,
                                        bool (*takes_value)(const std::string& name),
                                        absl::string_view bench);

// A run count from `min` to a million.
absl::StatusOr<int> ParseRunCount(absl::string_view flag, absl::string_view text, int min);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_FLAG_VALUES_H_
