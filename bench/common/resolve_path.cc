#include "bench/common/resolve_path.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"

namespace zygo::bench {

absl::StatusOr<std::string> ResolvePath(const std::string& path, const char* what, int mode) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return base::ErrnoStatus(errno, absl::StrCat(what, ": realpath(", path, ")"));
  }
  if (access(resolved, mode) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat(what, ": access(", resolved, ")"));
  }
  return std::string(resolved);
}

}  // namespace zygo::bench
