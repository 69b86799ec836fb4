// An OCI image from the store, pulled first when the policy says so (docker's --pull).
#ifndef ZYGO_RUNTIME_IMAGE_PULL_H_
#define ZYGO_RUNTIME_IMAGE_PULL_H_

#include <string>

#include "absl/status/statusor.h"
#include "images/reference.h"
#include "images/run_image.h"
#include "images/store.h"

namespace zygo::runtime {

enum class PullPolicy { kMissing, kAlways, kNever };

struct PullOptions {
  PullPolicy policy = PullPolicy::kMissing;
  images::TlsVerify tls_verify = images::TlsVerify::kDefault;
  // Ends the error when the image is absent and policy is kNever: what the user can do.
  std::string when_missing;
};

// zygo-image (pull, load, login), beside this binary.
absl::StatusOr<std::string> ImageToolPath();

// The image `reference` names in `store` (`text` as the user wrote it). A pull runs
// `zygo-image pull`, whose progress goes to this process's stderr; an empty error message
// means zygo-image already printed why it failed.
absl::StatusOr<images::RunnableImage> FindOrPullImage(const images::Store& store,
                                                      const images::Reference& reference,
                                                      const std::string& text,
                                                      const PullOptions& options);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_IMAGE_PULL_H_
