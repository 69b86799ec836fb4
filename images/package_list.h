// The Debian package names a spec's `system = [...]` or `zygo run --system` may name, and
// the one canonical list they become (the system layer's key covers it). Pure.
#ifndef ZYGO_IMAGES_PACKAGE_LIST_H_
#define ZYGO_IMAGES_PACKAGE_LIST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

// What ValidatePackageName accepts, for error messages.
inline constexpr char kPackageNameRule[] =
    "a Debian package name: lowercase letters, digits, '+', '-' and '.', at least two, "
    "starting with a letter or digit";

// Debian policy 5.6.1's package name: [a-z0-9][a-z0-9+.-]+. No version (=1.2), no
// architecture (:amd64), no apt pattern: each name reaches apt-get as one argument, and
// none can start with '-'. InvalidArgument naming the name and the rule otherwise.
absl::Status ValidatePackageName(absl::string_view name);

// `names` validated, sorted and without duplicates: two lists naming the same packages
// make the same layer.
absl::StatusOr<std::vector<std::string>> CanonicalPackageList(std::vector<std::string> names);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_PACKAGE_LIST_H_
