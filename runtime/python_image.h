// What a Python image gets beyond its own root: the bytecode root (images/bytecode_layer.h),
// built on first use, and a cached venv from a requirements file at /venv
// (images/venv_cache.h). System packages are runtime/system_packages.h.
#ifndef ZYGO_RUNTIME_PYTHON_IMAGE_H_
#define ZYGO_RUNTIME_PYTHON_IMAGE_H_

#include <string>

#include "absl/status/status.h"
#include "core/spec.h"
#include "images/run_image.h"
#include "images/store.h"

namespace zygo::runtime {

// The image's bytecode root, or its own root when it needs none, when ZYGO_BYTECODE=0,
// or when the build fails (one warning line on stderr). `verbose` reports a build.
std::string BytecodeRootOf(images::Store& store, const images::RunnableImage& image,
                           const core::Loosening& loosening, bool verbose);

// Marks a status as a failed build of what an image needs (a venv): the same inputs fail
// the same way, so a caller that would retry it per request remembers it instead.
void MarkBuildFailure(absl::Status& status);
bool IsBuildFailure(const absl::Status& status);

struct VenvFiles {
  std::string requirements;  // host path of the requirements file
  std::string find_links;    // empty: pip's own configuration
};

// Builds (or reuses) the venv for `image` and these files and puts it in `spec`: read-only
// at /venv and first on PATH, under the caller's own env. `rootfs` is the root the run
// uses; when that is a system layer, `system_key` is its key (the venv is built against
// its libraries, and keyed on it), else empty. A failed build is marked
// (MarkBuildFailure).
absl::Status ApplyVenv(images::Store& store, const images::RunnableImage& image,
                       const std::string& rootfs, const std::string& system_key,
                       const VenvFiles& files, bool verbose, core::Spec& spec);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_PYTHON_IMAGE_H_
