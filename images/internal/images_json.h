// images.json, the store's image records (version 1), replaced whole under the flock on
// <root>/lock:
//   {"version": 1,
//    "images": [{"reference": "docker.io/library/python:3.12-slim",
//                "manifest_digest": "sha256:...", "config_digest": "sha256:...",
//                "layer_digests": ["sha256:...", ...], "diff_ids": ["sha256:...", ...],
//                "size_bytes": 123, "created_unix": 1700000000}, ...]}
// A missing file means an empty store. Records keep the order they were first made in.
#ifndef ZYGO_IMAGES_INTERNAL_IMAGES_JSON_H_
#define ZYGO_IMAGES_INTERNAL_IMAGES_JSON_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "images/store.h"

namespace zygo::images {

// Every digest well formed and a reference present.
absl::Status ValidateRecord(const ImageRecord& record);

// The file's text for `records`.
std::string ImagesJsonText(const std::vector<ImageRecord>& records);

// The records in `text` (read from `path`, which errors name); DataLoss when damaged.
absl::StatusOr<std::vector<ImageRecord>> ParseImagesJson(const std::string& text,
                                                         const std::string& path);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_IMAGES_JSON_H_
