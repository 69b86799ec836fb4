#include "images/package_list.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace zygo::images {

absl::Status ValidatePackageName(absl::string_view name) {
  auto first = [](char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); };
  auto rest = [&](char c) { return first(c) || c == '+' || c == '-' || c == '.'; };
  if (name.size() >= 2 && first(name[0]) && std::all_of(name.begin() + 1, name.end(), rest)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", absl::CEscape(name), "\" is not ", kPackageNameRule));
}

absl::StatusOr<std::vector<std::string>> CanonicalPackageList(std::vector<std::string> names) {
  for (const std::string& name : names) ZYGO_RETURN_IF_ERROR(ValidatePackageName(name));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace zygo::images
