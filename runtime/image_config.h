// An OCI image's config applied to a sandbox the way docker applies it, the same for
// `zygo run` and for a function: Env under the caller's own, WorkingDir and User unless
// the caller set them, and the command as Entrypoint followed by the caller's arguments
// (else the image's Cmd).
#ifndef ZYGO_RUNTIME_IMAGE_CONFIG_H_
#define ZYGO_RUNTIME_IMAGE_CONFIG_H_

#include "absl/status/status.h"
#include "core/spec.h"
#include "images/run_image.h"

namespace zygo::runtime {

// What the caller set itself, so the image's value does not apply.
struct CallerSettings {
  bool workdir = false;  // zygo run -w
  bool user = false;     // zygo run -u
  // false: spec.argv is not the image's command (a Python function runs its agent, not
  // the image's Entrypoint), so Entrypoint and Cmd are left out.
  bool command_is_the_images = true;
};

// `spec.argv` holds the caller's arguments. Names in User are looked up in the image's own
// /etc/passwd and /etc/group. Refuses an image with neither Entrypoint nor Cmd when the
// caller gave no command.
absl::Status ApplyImageConfig(const images::RunnableImage& image, const CallerSettings& caller,
                              core::Spec& spec);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_IMAGE_CONFIG_H_
