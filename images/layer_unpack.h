// Unpacks OCI layer tarballs (gzip, zstd or plain; libarchive) safely, keeping whiteouts
// as markers for layer_flatten.h. Parent side.
#ifndef ZYGO_IMAGES_LAYER_UNPACK_H_
#define ZYGO_IMAGES_LAYER_UNPACK_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace zygo::images {

struct UnpackOptions {
  // Device nodes in a layer: created only when the caller may (root); otherwise refused
  // with a clear error. Rootless unpack never creates them.
  bool allow_devices = false;
};

struct UnpackResult {
  std::string diff_id;  // sha256 of the uncompressed tar stream
  int64_t files = 0;
  int64_t bytes = 0;
};

// Unpacks `layer_file` into the empty directory `dest_dir`, keeping OCI whiteout entries
// (".wh.<name>" files and ".wh..wh..opq" markers) as plain empty marker files so that
// FlattenLayers can apply them. Every entry is created through openat2(RESOLVE_IN_ROOT)
// (or an equivalent walk) relative to `dest_dir`: refuses, with an error naming the entry,
// absolute names, "..", hardlinks whose target lies outside the layer, and writing
// through a symlinked directory. Symlink targets are data and may point anywhere: they
// are resolved inside the sandbox's own root. Ownership and modes are kept where the
// caller may set them; setuid bits are kept (the sandbox mounts nosuid).
absl::StatusOr<UnpackResult> UnpackLayer(const std::string& layer_file, const std::string& dest_dir,
                                         const UnpackOptions& options = {});

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_LAYER_UNPACK_H_
