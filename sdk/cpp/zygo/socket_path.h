// Where the supervisor's API socket lives, so `zygo serve`, the `zygo` client commands and
// the SDKs agree on it without configuration.
#ifndef ZYGO_SDK_CPP_ZYGO_SOCKET_PATH_H_
#define ZYGO_SDK_CPP_ZYGO_SOCKET_PATH_H_

#include <sys/types.h>

#include <string>

#include "absl/strings/string_view.h"

namespace zygo::sdk {

// The default for a caller whose effective uid is `euid`: /run/zygo/zygo.sock for root;
// otherwise $XDG_RUNTIME_DIR/zygo/zygo.sock, or /tmp/zygo-<uid>/zygo.sock when
// `xdg_runtime_dir` is null or empty. Pure: reads nothing from the process.
std::string DefaultSocketPathFor(uid_t euid, const char* xdg_runtime_dir);

// DefaultSocketPathFor(geteuid(), getenv("XDG_RUNTIME_DIR")).
std::string DefaultSocketPath();

// The socket to serve or dial: `flag` (a --socket value) when not empty, else $ZYGO_SOCKET
// when set and not empty, else DefaultSocketPath().
std::string ResolveSocketPath(absl::string_view flag);

}  // namespace zygo::sdk

#endif  // ZYGO_SDK_CPP_ZYGO_SOCKET_PATH_H_
