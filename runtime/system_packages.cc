#include "runtime/system_packages.h"

#include <stdio.h>

#include "absl/strings/str_format.h"
#include "images/bytecode_layer.h"
#include "images/system_layer.h"
#include "runtime/python_image.h"

namespace zygo::runtime {

absl::StatusOr<SystemRoot> ApplySystemPackages(images::Store& store,
                                               const images::RunnableImage& image,
                                               const std::string& rootfs,
                                               const std::vector<std::string>& packages,
                                               const images::SandboxRunner& run, bool verbose) {
  images::SystemRequest request;
  request.packages = packages;
  request.base_rootfs = rootfs;
  // The packages go over the root this run uses: a layer over the bytecode root keeps
  // the stdlib's .pyc files, and is another layer than one over the image's own root.
  request.base_key =
      rootfs == image.rootfs ? image.manifest_digest : images::BytecodeKey(image.manifest_digest);
  absl::StatusOr<images::SystemLayer> layer = images::EnsureSystemLayer(store, image, request, run);
  if (!layer.ok()) {
    absl::Status failed = layer.status();
    MarkBuildFailure(failed);
    return failed;
  }
  if (verbose) {
    std::string what = "reused";
    if (layer->built) {
      what = absl::StrFormat("built in %.0f ms: %d .deb files, %d files, %.1f MB", layer->build_ms,
                             layer->debs, layer->files, layer->bytes / 1e6);
    }
    fprintf(stderr, "zygo: system layer %s %s\n", layer->key.substr(0, 19).c_str(), what.c_str());
  }
  return SystemRoot{layer->rootfs, layer->key};
}

}  // namespace zygo::runtime
