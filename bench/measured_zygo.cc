#include "bench/measured_zygo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"

namespace zygo::bench {
namespace {

absl::StatusOr<std::string> Resolved(const std::string& path, const char* what) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr || access(resolved, X_OK) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat(what, " ", path));
  }
  return std::string(resolved);
}

}  // namespace

absl::StatusOr<std::string> MeasuredZygo(const std::string& flag) {
  if (!flag.empty()) return Resolved(flag, "--zygo");
  if (const char* forwarding = getenv(kMeasuredZygoEnv); forwarding != nullptr && *forwarding) {
    return Resolved(forwarding, kMeasuredZygoEnv);
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    const std::string dir(self, strrchr(self, '/') - self);
    // Installed side by side, or bazel-bin/bench/zygo-bench beside bazel-bin/cli/zygo.
    for (const std::string& candidate : {dir + "/zygo", dir + "/../cli/zygo"}) {
      if (access(candidate.c_str(), X_OK) == 0) return Resolved(candidate, "zygo");
    }
  }
  return absl::NotFoundError(
      "no zygo to measure: run the benches as `zygo bench ...`, or pass --zygo PATH");
}

bool IsForwardingZygo(const std::string& zygo) {
  const char* forwarding = getenv(kMeasuredZygoEnv);
  if (forwarding == nullptr) return false;
  absl::StatusOr<std::string> resolved = Resolved(forwarding, kMeasuredZygoEnv);
  return resolved.ok() && *resolved == zygo;
}

}  // namespace zygo::bench
