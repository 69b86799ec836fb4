#include "bench/common/measured_zygo.h"

#include <stdlib.h>
#include <unistd.h>

#include "bench/common/resolve_path.h"
#include "core/base/helper_binary.h"

namespace zygo::bench {

absl::StatusOr<std::string> MeasuredZygo(const std::string& flag) {
  if (!flag.empty()) return ResolvePath(flag, "--zygo", X_OK);
  if (const char* forwarding = getenv(kMeasuredZygoEnv); forwarding != nullptr && *forwarding) {
    return ResolvePath(forwarding, kMeasuredZygoEnv, X_OK);
  }
  // Installed side by side, or bazel-bin/bench/zygo-bench beside bazel-bin/cli/zygo.
  absl::StatusOr<std::string> beside = base::FindHelperBinary("zygo", "cli", "the zygo to measure");
  if (beside.ok()) return ResolvePath(*beside, "zygo", X_OK);
  return absl::NotFoundError(
      "no zygo to measure: run the benches as `zygo bench ...`, or pass --zygo PATH");
}

bool IsForwardingZygo(const std::string& zygo) {
  const char* forwarding = getenv(kMeasuredZygoEnv);
  if (forwarding == nullptr) return false;
  absl::StatusOr<std::string> resolved = ResolvePath(forwarding, kMeasuredZygoEnv, X_OK);
  return resolved.ok() && *resolved == zygo;
}

}  // namespace zygo::bench
