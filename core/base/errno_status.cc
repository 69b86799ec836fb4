#include "core/base/errno_status.h"

#include <errno.h>
#include <string.h>

#include "absl/strings/str_cat.h"

namespace zygo::base {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", strerror(err));
  switch (err) {
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::UnimplementedError(message);
    case ENOMEM:
    case ENOSPC:
    case EAGAIN:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

const char* ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "E?";
}

}  // namespace zygo::base
