// Finds the helper programs `zygo` runs (zygo-image, zygo-net): dynamically linked tools
// kept out of the static `zygo` binary.
#ifndef ZYGO_CLI_HELPER_BINARY_H_
#define ZYGO_CLI_HELPER_BINARY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::cli {

// `name` next to zygo (an install), in bazel-bin/<package>, or in zygo's runfiles.
// NotFound names `what` the helper is for.
absl::StatusOr<std::string> FindHelperBinary(absl::string_view name, absl::string_view package,
                                             absl::string_view what);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_HELPER_BINARY_H_
