#include "runtime/python_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "images/build_sandbox.h"
#include "images/bytecode_layer.h"
#include "images/venv_cache.h"

namespace zygo::runtime {

std::string BytecodeRootOf(images::Store& store, const images::RunnableImage& image,
                           const core::Loosening& loosening, bool verbose) {
  const char* wanted = getenv("ZYGO_BYTECODE");
  if (wanted != nullptr && strcmp(wanted, "0") == 0) return image.rootfs;
  absl::StatusOr<std::optional<images::BytecodeRoot>> root =
      images::EnsureBytecodeRoot(store, image, images::RunSandboxJob, loosening);
  if (!root.ok()) {
    std::string why(root.status().message());
    std::replace(why.begin(), why.end(), '\n', ' ');
    fprintf(stderr, "zygo: warning: no bytecode layer for %s (%s); running it without\n",
            image.reference.c_str(), why.c_str());
    return image.rootfs;
  }
  if (!root->has_value()) return image.rootfs;
  if (verbose && (*root)->built) {
    fprintf(stderr, "zygo: built %s: %lld .pyc files, %.1f MB, in %.0f ms\n",
            (*root)->reference.c_str(), static_cast<long long>((*root)->pyc_files),
            (*root)->pyc_bytes / 1e6, (*root)->build_ms);
  }
  return (*root)->rootfs;
}

namespace {
constexpr char kBuildFailureUrl[] = "zygo.dev/build-failure";
}  // namespace

void MarkBuildFailure(absl::Status& status) {
  if (!status.ok()) status.SetPayload(kBuildFailureUrl, absl::Cord("1"));
}

bool IsBuildFailure(const absl::Status& status) {
  return status.GetPayload(kBuildFailureUrl).has_value();
}

absl::Status ApplyVenv(images::Store& store, const images::RunnableImage& image,
                       const std::string& rootfs, const std::string& system_key,
                       const VenvFiles& files, bool verbose, core::Spec& spec) {
  images::VenvRequest request{files.requirements, files.find_links, spec.loosening, system_key};
  absl::StatusOr<images::Venv> venv =
      images::EnsureVenv(store, image, rootfs, request, images::RunSandboxJob);
  if (!venv.ok()) {
    absl::Status failed = venv.status();
    MarkBuildFailure(failed);
    return failed;
  }
  if (verbose) {
    fprintf(stderr, "zygo: venv %s %s\n", venv->key.substr(0, 19).c_str(),
            venv->built ? absl::StrFormat("built in %.0f ms", venv->build_ms).c_str() : "reused");
  }
  spec.volumes.push_back({venv->path, images::kVenvMountpoint, /*read_only=*/true});
  std::vector<std::string> env = images::VenvEnvironment(image.config.env);
  spec.env.insert(spec.env.begin(), env.begin(), env.end());
  return absl::OkStatus();
}

}  // namespace zygo::runtime
