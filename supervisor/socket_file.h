// The socket files the API front ends listen on: made ready for bind(2) the same way for
// HTTP and gRPC. Parent (supervisor) side.
#ifndef ZYGO_SUPERVISOR_SOCKET_FILE_H_
#define ZYGO_SUPERVISOR_SOCKET_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace zygo::supervisor {

// The directory `path` names a file in ("." for a bare name, "/" for one in the root).
std::string ParentDir(const std::string& path);

// Checks the length against sun_path, creates the parent directory (0700, with missing
// parents), and removes a socket file a dead server left behind. A socket someone still
// listens on is refused (AlreadyExists), and so is a path that is not a socket
// (FailedPrecondition): neither is touched. Another server starting between this check and
// the caller's bind can still lose its address.
absl::Status PrepareSocketPath(const std::string& path);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SOCKET_FILE_H_
