// An OCI image from the store, pulled first when the policy says so (docker's --pull).
#ifndef ZYGO_RUNTIME_IMAGE_PULL_H_
#define ZYGO_RUNTIME_IMAGE_PULL_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "images/reference.h"
#include "images/run_image.h"
#include "images/store.h"

namespace zygo::runtime {

enum class PullPolicy { kMissing, kAlways, kNever };

// "missing", "always", "never" (docker's --pull words).
std::optional<PullPolicy> ParsePullPolicy(absl::string_view name);

struct PullOptions {
  PullPolicy policy = PullPolicy::kMissing;
  images::TlsVerify tls_verify = images::TlsVerify::kDefault;
  // Ends the error when the image is absent and policy is kNever: what the user can do.
  std::string when_missing;
  // Set: a pull's progress comes here a line at a time (zygo-image --progress=lines)
  // instead of going to stderr, and a failed pull's error is its last line.
  std::function<void(const std::string& line)> on_progress;
};

// zygo-image (pull, load, login), beside this binary.
absl::StatusOr<std::string> ImageToolPath();

// The image `reference` names in `store` (`text` as the user wrote it). A pull runs
// `zygo-image pull`, whose progress goes to this process's stderr (or to on_progress); an
// empty error message means zygo-image already printed why it failed.
absl::StatusOr<images::RunnableImage> FindOrPullImage(const images::Store& store,
                                                      const images::Reference& reference,
                                                      const std::string& text,
                                                      const PullOptions& options);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_IMAGE_PULL_H_
