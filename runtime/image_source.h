// What a sandbox's IMAGE names, parsed once: the built-in `host` image, `dir:PATH`, or an
// OCI reference (`python:3.12-slim`, `127.0.0.1:5000/app:v1`). `zygo run` and function
// specs take the same words.
#ifndef ZYGO_RUNTIME_IMAGE_SOURCE_H_
#define ZYGO_RUNTIME_IMAGE_SOURCE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/spec.h"
#include "images/reference.h"

namespace zygo::runtime {

struct ImageSource {
  enum class Kind {
    kHost,       // "host"
    kDirectory,  // "dir:/abs/path": a root the user made, used as it is
    kOci,        // an image reference, run from its flattened root in the store
  };
  Kind kind = Kind::kHost;
  std::string directory;        // kDirectory: absolute
  images::Reference reference;  // kOci
  std::string text;             // as written, for messages and listings

  static ImageSource Host();
  bool oci() const { return kind == Kind::kOci; }
  // The root of a host or dir: image; an OCI image's root comes from the store.
  core::RootFs BuiltInRoot() const;
};

// The error names what is wrong and the three forms ("dir: needs an absolute path",
// "invalid reference 'Python': repository names must be lowercase").
absl::StatusOr<ImageSource> ParseImageSource(absl::string_view text);

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_IMAGE_SOURCE_H_
