// `zygo load PATH [NAME]`: images from an OCI layout (a directory, or a tar of one) or a
// docker-archive tar (`docker save`), for machines with no registry. Blobs are checked
// against their digests as they enter the store. Parent side.
#ifndef ZYGO_IMAGES_LOADER_H_
#define ZYGO_IMAGES_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "images/materialize.h"
#include "images/store.h"

namespace zygo::images {

// Loads every image in `path`. Each is recorded under its own name (the layout's
// org.opencontainers.image.ref.name annotation, or docker-archive RepoTags); `name`,
// when given, names an archive holding one image (and is required when it has none).
absl::StatusOr<std::vector<ImageRecord>> LoadImages(Store& store, const std::string& path,
                                                    const std::string& name, const StepFn& step);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_LOADER_H_
