// The default API socket path: root's is system-wide, everyone else's is per user.
#include "sdk/cpp/zygo/socket_path.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace zygo::sdk {

std::string DefaultSocketPathFor(uid_t euid, const char* xdg_runtime_dir) {
  if (euid == 0) return "/run/zygo/zygo.sock";
  if (xdg_runtime_dir != nullptr && xdg_runtime_dir[0] != '\0') {
    return absl::StrCat(xdg_runtime_dir, "/zygo/zygo.sock");
  }
  // The uid in the name keeps users apart in the shared /tmp; the supervisor creates the
  // directory 0700 and refuses one it does not own.
  return absl::StrCat("/tmp/zygo-", euid, "/zygo.sock");
}

std::string DefaultSocketPath() {
  return DefaultSocketPathFor(geteuid(), getenv("XDG_RUNTIME_DIR"));
}

std::string ResolveSocketPath(absl::string_view flag) {
  if (!flag.empty()) return std::string(flag);
  const char* env = getenv("ZYGO_SOCKET");
  if (env != nullptr && env[0] != '\0') return env;
  return DefaultSocketPath();
}

}  // namespace zygo::sdk
