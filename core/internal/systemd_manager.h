// Which systemd manager zygo asks for a transient scope, whether it can be reached, and
// the call itself, made by the zygo-scope helper: sd-bus comes only as a shared library,
// and `zygo` is a static binary. Parent side.
#ifndef ZYGO_CORE_INTERNAL_SYSTEMD_MANAGER_H_
#define ZYGO_CORE_INTERNAL_SYSTEMD_MANAGER_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::core::internal {

enum class SystemdManager {
  kSystem,  // PID 1, for root
  kUser,    // the user's own manager (user@UID.service), for everyone else
};

const char* SystemdManagerName(SystemdManager manager);

// systemd's private socket, which answers without a D-Bus daemon (root:
// /run/systemd/private; a user: $XDG_RUNTIME_DIR/systemd/private).
std::string SystemdPrivateSocket(SystemdManager manager);

// True when `manager` can be reached: its private socket or a bus is there. Reads only.
bool SystemdManagerReachable(SystemdManager manager);

// A transient scope with Delegate=yes holding `pid`.
struct SystemdScopeRequest {
  SystemdManager manager = SystemdManager::kSystem;
  std::string unit;         // "zygo-812-5a3c.scope"
  std::string description;  // "zygo run (pid 812)"
  pid_t pid = 0;
};

// The zygo-scope helper's path (next to zygo, or in bazel-bin/core); NotFound says so.
absl::StatusOr<std::string> FindSystemdScopeHelper();

// Runs `helper` for `request` and waits for it: OK once `request.pid` is in the scope's
// cgroup; otherwise the error the helper printed.
absl::Status RunSystemdScopeHelper(const std::string& helper, const SystemdScopeRequest& request);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_SYSTEMD_MANAGER_H_
