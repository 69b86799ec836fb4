// What a derived layer's build log says went wrong, in one line for the user.
#ifndef ZYGO_IMAGES_INTERNAL_BUILD_LOG_H_
#define ZYGO_IMAGES_INTERNAL_BUILD_LOG_H_

#include <string>

#include "absl/strings/string_view.h"

namespace zygo::images {

// The last line of `log` that starts with `error_prefix` (pip's "ERROR:", apt's "E:"),
// else its last line of any kind; surrounding blanks stripped, cut to 300 characters.
std::string BuildFailureLine(const std::string& log, absl::string_view error_prefix);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_BUILD_LOG_H_
