// System packages for an OCI image: a spec's `system = ["pkg", ...]` (or `zygo run
// --system PKG`) installed once into a derived root with the image's own apt, and every
// later run of the same image with the same packages started from that root. Parent side.
//
// The build, in sandboxes of the image's root (read-only) with one writable directory at
// /tmp: `apt-get update` and `apt-get install --download-only --no-install-recommends
// PKGS` (pinned to the image's own sources, locking off, never dropping to the _apt user,
// whose uid a user namespace does not map), with a network that reaches only the hosts of
// those sources (SandboxJob::allow); then `dpkg-deb -x` of each downloaded .deb with no
// network at all. The derived root is a hard-linked copy of the base root
// (images/link_tree.h) with the unpacked files laid over it (images/tree_overlay.h).
// Maintainer scripts never run, and dpkg's database does not list the packages.
//
//   <store>/system/sha256/<key>/root/        the derived root
//   <store>/system/sha256/<key>/zygo-image   the manifest digest of its image (prune)
//   <store>/system/sha256/<key>/packages     the package list, one a line
//   <store>/system/locks/<key>               flock'd while it is built
#ifndef ZYGO_IMAGES_SYSTEM_LAYER_H_
#define ZYGO_IMAGES_SYSTEM_LAYER_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "images/run_image.h"
#include "images/sandbox_job.h"
#include "images/store.h"

namespace zygo::images {

struct SystemRequest {
  std::vector<std::string> packages;  // CanonicalPackageList's (images/package_list.h)
  // The root the packages go over: the image's own, or its bytecode root (so its stdlib
  // keeps its .pyc files), and that root's store key: the manifest digest, or the
  // bytecode root's key.
  std::string base_rootfs;
  std::string base_key;
};

struct SystemLayer {
  std::string rootfs;  // <store>/system/sha256/<hex>/root
  std::string key;     // sha256:<hex>
  bool built = false;  // this call built it
  double build_ms = 0;
  int64_t debs = 0;   // .deb files unpacked
  int64_t files = 0;  // files and symlinks laid over the base
  int64_t bytes = 0;
};

// sha256 over a format tag, the base root's key and the canonical package list.
std::string SystemLayerKey(absl::string_view base_key, const std::vector<std::string>& packages);

// The apt-get options of every build (after "apt-get", before the command), for a job
// whose writable directory is /tmp.
std::vector<std::string> AptGetOptions();

// The system layer for `request` on `image`, built first through `run` if the store
// lacks it; concurrent builds of one key wait for each other. `run` must attach the
// network of a job with `allow` (runtime's runner does). Errors are one line naming the
// step: an image without apt-get or dpkg-deb, or without apt sources, a source zygo
// cannot allow by name, apt's own "E:" line, a package that conflicts with the image's
// files. Nothing is left in the store's tmp/ on any path.
absl::StatusOr<SystemLayer> EnsureSystemLayer(Store& store, const RunnableImage& image,
                                              const SystemRequest& request,
                                              const SandboxRunner& run);

// Removes the system layers of images the store no longer records (`live_manifests`)
// and returns the bytes freed.
absl::StatusOr<int64_t> PruneSystemLayers(const Store& store,
                                          const std::set<std::string>& live_manifests);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_SYSTEM_LAYER_H_
