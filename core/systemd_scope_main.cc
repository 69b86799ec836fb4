// `zygo-scope`: asks systemd for a transient scope with Delegate=yes holding a process
// (zygo itself, which runs this), and exits once the process is in it. A program of its
// own because sd-bus is a shared library only and `zygo` is static.
//   zygo-scope --manager system|user --unit NAME.scope --description TEXT --pid PID
// Exit 0: done. Exit 1: one line on stderr saying why. Exit 2: bad arguments.
#include <stdio.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "core/internal/systemd_scope.h"

namespace {

using zygo::core::internal::SystemdManager;
using zygo::core::internal::SystemdScopeRequest;

int Usage(const char* problem) {
  fprintf(stderr,
          "zygo-scope: %s\nusage: zygo-scope --manager system|user --unit NAME.scope "
          "--description TEXT --pid PID\n",
          problem);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  SystemdScopeRequest request;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage(("no value for " + flag).c_str());
    const std::string value = argv[i + 1];
    if (flag == "--manager" && (value == "system" || value == "user")) {
      request.manager = value == "system" ? SystemdManager::kSystem : SystemdManager::kUser;
    } else if (flag == "--unit") {
      request.unit = value;
    } else if (flag == "--description") {
      request.description = value;
    } else if (flag == "--pid" && absl::SimpleAtoi(value, &request.pid) && request.pid > 0) {
    } else {
      return Usage(("bad argument " + flag + " " + value).c_str());
    }
  }
  if (request.unit.empty() || request.pid == 0) return Usage("--unit and --pid are needed");
  absl::Status started = StartDelegatedScope(request, absl::Seconds(10));
  if (!started.ok()) {
    fprintf(stderr, "%s\n", std::string(started.message()).c_str());
    return 1;
  }
  return 0;
}
