#include "core/base/helper_binary.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace zygo::base {

absl::StatusOr<std::string> FindHelperBinary(absl::string_view name, absl::string_view package,
                                             absl::string_view what) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self, strrchr(self, '/') - self);
    for (const std::string& candidate :
         {absl::StrCat(dir, "/", name), absl::StrCat(dir, "/../", package, "/", name),
          absl::StrCat(self, ".runfiles/zygo/", package, "/", name)}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return absl::NotFoundError(absl::StrCat(name, " (", what, ") is not installed next to zygo"));
}

}  // namespace zygo::base
