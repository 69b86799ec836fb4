// Turns an errno into an absl::Status that names the failed call.
#ifndef ZYGO_CORE_BASE_ERRNO_STATUS_H_
#define ZYGO_CORE_BASE_ERRNO_STATUS_H_

#include <errno.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zygo::base {

// "what: strerror(err)" with a status code chosen from the errno (EPERM/EACCES ->
// PermissionDenied, ENOENT -> NotFound, EINVAL -> InvalidArgument, ...). Parent side only.
absl::Status ErrnoStatus(int err, absl::string_view what);

// ErrnoStatus of the errno a call just left, read before `message()` builds the text
// (building it allocates, which may change errno). Parent side only.
template <typename MessageFn>
absl::Status LastErrnoStatus(MessageFn message) {
  const int err = errno;
  return ErrnoStatus(err, message());
}

// Runs `call` again while it fails with EINTR; returns its last result.
template <typename Call>
auto RetryOnEintr(Call call) {
  decltype(call()) rc;
  do {
    rc = call();
  } while (rc < 0 && errno == EINTR);
  return rc;
}

// Names an errno the way the C headers do ("EPERM"), for messages and reports.
const char* ErrnoName(int err);

}  // namespace zygo::base

#endif  // ZYGO_CORE_BASE_ERRNO_STATUS_H_
