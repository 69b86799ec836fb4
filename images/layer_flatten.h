// Flattens a stack of unpacked layers (layer_unpack.h) into one root directory, applying
// OCI whiteouts. Parent side.
#ifndef ZYGO_IMAGES_LAYER_FLATTEN_H_
#define ZYGO_IMAGES_LAYER_FLATTEN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zygo::images {

// Copies `layer_dirs` (bottom first, each made by UnpackLayer) into the empty directory
// `dest_dir`, applying whiteouts: ".wh.<name>" deletes <name> from the layers below,
// ".wh..wh..opq" hides everything below in that directory. Marker files never appear in
// the result. Hard links within a layer stay hard links; regular files are copied with
// reflink/copy_file_range where possible.
absl::Status FlattenLayers(const std::vector<std::string>& layer_dirs, const std::string& dest_dir);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_LAYER_FLATTEN_H_
