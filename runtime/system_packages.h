// What an OCI image gets from a spec's `system = [...]` or `zygo run --system PKG`: its
// Debian packages installed with the image's own apt into a derived root
// (images/system_layer.h), built once per image and package list in sandboxes whose
// network reaches only the image's apt mirrors.
#ifndef ZYGO_RUNTIME_SYSTEM_PACKAGES_H_
#define ZYGO_RUNTIME_SYSTEM_PACKAGES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "images/run_image.h"
#include "images/sandbox_job.h"
#include "images/store.h"

namespace zygo::runtime {

struct SystemRoot {
  std::string rootfs;  // the derived root to run from
  std::string key;     // its key: a venv built against it is keyed on it too
};

// The system layer of `image` for `packages` (canonical: images/package_list.h), laid
// over `rootfs`, which is the image's own root or its bytecode root (BytecodeRootOf's
// answer; the layer is keyed on which). Built first, through `run`, when the store lacks
// it; `run` must attach a job's egress network. `verbose` says whether it was built or
// reused. A failed build is marked (MarkBuildFailure) and its error is one line.
absl::StatusOr<SystemRoot> ApplySystemPackages(images::Store& store,
                                               const images::RunnableImage& image,
                                               const std::string& rootfs,
                                               const std::vector<std::string>& packages,
                                               const images::SandboxRunner& run, bool verbose);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_SYSTEM_PACKAGES_H_
