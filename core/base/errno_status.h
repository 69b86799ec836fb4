// Turns an errno into an absl::Status that names the failed call.
#ifndef ZYGO_CORE_BASE_ERRNO_STATUS_H_
#define ZYGO_CORE_BASE_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zygo::base {

// "what: strerror(err)" with a status code chosen from the errno (EPERM/EACCES ->
// PermissionDenied, ENOENT -> NotFound, EINVAL -> InvalidArgument, ...). Parent side only.
absl::Status ErrnoStatus(int err, absl::string_view what);

// Names an errno the way the C headers do ("EPERM"), for messages and reports.
const char* ErrnoName(int err);

}  // namespace zygo::base

#endif  // ZYGO_CORE_BASE_ERRNO_STATUS_H_
