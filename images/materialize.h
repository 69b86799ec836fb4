// Turns an image whose manifest, config and layer blobs are in the store into a
// runnable root: each layer unpacked once (by diff_id), the stack flattened once (by
// manifest digest), and the reference recorded. Shared by `zygo pull` and `zygo load`.
#ifndef ZYGO_IMAGES_MATERIALIZE_H_
#define ZYGO_IMAGES_MATERIALIZE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "images/manifest.h"
#include "images/store.h"

namespace zygo::images {

// Progress lines ("unpacking sha256:ab12... (3/7)"); may be null.
using StepFn = std::function<void(const std::string&)>;

// `manifest_bytes` is the platform manifest (already in the store under
// `manifest_digest`); its config and layer blobs must be in the store too.
absl::StatusOr<ImageRecord> MaterializeImage(Store& store, const std::string& reference,
                                             const std::string& manifest_digest,
                                             const Manifest& manifest, const StepFn& step);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_MATERIALIZE_H_
