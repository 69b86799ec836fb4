#include "core/internal/systemd_manager.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/helper_binary.h"
#include "core/base/run_program.h"
#include "core/internal/cgroup_fs.h"

namespace zygo::core::internal {
namespace {

std::string RuntimeDir() {
  const char* dir = getenv("XDG_RUNTIME_DIR");
  if (dir != nullptr && dir[0] == '/') return dir;
  return absl::StrCat("/run/user/", geteuid());
}

}  // namespace

const char* SystemdManagerName(SystemdManager manager) {
  return manager == SystemdManager::kSystem ? "system" : "user";
}

std::string SystemdPrivateSocket(SystemdManager manager) {
  return manager == SystemdManager::kSystem ? "/run/systemd/private"
                                            : absl::StrCat(RuntimeDir(), "/systemd/private");
}

bool SystemdManagerReachable(SystemdManager manager) {
  if (PathExists(SystemdPrivateSocket(manager))) return true;
  if (manager == SystemdManager::kSystem) {
    return PathExists("/run/dbus/system_bus_socket") ||
           getenv("DBUS_SYSTEM_BUS_ADDRESS") != nullptr;
  }
  return PathExists(absl::StrCat(RuntimeDir(), "/bus")) ||
         getenv("DBUS_SESSION_BUS_ADDRESS") != nullptr;
}

absl::StatusOr<std::string> FindSystemdScopeHelper() {
  return base::FindHelperBinary("zygo-scope", "core",
                                "the helper that asks systemd for a cgroup scope");
}

absl::Status RunSystemdScopeHelper(const std::string& helper, const SystemdScopeRequest& request) {
  absl::StatusOr<base::ProgramRun> run = base::RunProgram(
      {helper, "--manager", SystemdManagerName(request.manager), "--unit", request.unit,
       "--description", request.description, "--pid", absl::StrCat(request.pid)},
      /*with_stderr=*/true);
  if (!run.ok()) return run.status();
  if (run->exited_zero()) return absl::OkStatus();
  const std::string said(absl::StripAsciiWhitespace(run->output));
  return absl::UnavailableError(
      said.empty() ? absl::StrCat(helper, " failed (wait status ", run->wait_status, ")") : said);
}

}  // namespace zygo::core::internal
