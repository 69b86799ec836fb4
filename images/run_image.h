// What `zygo run` needs of a stored OCI image: its flattened root and its config
// (Env, WorkingDir, Entrypoint, Cmd, User). Store reads only, so the static `zygo`
// binary links it without libcurl or libarchive.
#ifndef ZYGO_IMAGES_RUN_IMAGE_H_
#define ZYGO_IMAGES_RUN_IMAGE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "images/manifest.h"
#include "images/reference.h"
#include "images/store.h"

namespace zygo::images {

struct RunnableImage {
  std::string reference;  // canonical
  std::string manifest_digest;
  std::string rootfs;  // the flattened root in the store
  ImageConfig config;
};

// The image recorded under `ref`, or nullopt when the store does not have it.
absl::StatusOr<std::optional<RunnableImage>> FindRunnableImage(const Store& store,
                                                               const Reference& ref);

struct NumericUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// The image's User ("1000", "1000:100", "app", "app:staff") as numbers, looking names up
// in the image's own /etc/passwd and /etc/group (never the host's).
absl::StatusOr<NumericUser> ResolveImageUser(const std::string& rootfs, const std::string& user);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_RUN_IMAGE_H_
