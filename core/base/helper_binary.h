// Finds the helper programs `zygo` runs (zygo-image, zygo-net, zygo-scope): dynamically
// linked tools kept out of the static `zygo` binary.
#ifndef ZYGO_CORE_BASE_HELPER_BINARY_H_
#define ZYGO_CORE_BASE_HELPER_BINARY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::base {

// `name` next to zygo (an install), in bazel-bin/<package>, or in zygo's runfiles.
// NotFound names `what` the helper is for.
absl::StatusOr<std::string> FindHelperBinary(absl::string_view name, absl::string_view package,
                                             absl::string_view what);

}  // namespace zygo::base

#endif  // ZYGO_CORE_BASE_HELPER_BINARY_H_
