#include "runtime/image_source.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace zygo::runtime {

ImageSource ImageSource::Host() {
  ImageSource source;
  source.text = "host";
  return source;
}

core::RootFs ImageSource::BuiltInRoot() const {
  return kind == Kind::kDirectory ? core::RootFs::Directory(directory) : core::RootFs::Host();
}

absl::StatusOr<ImageSource> ParseImageSource(absl::string_view text) {
  ImageSource source;
  source.text = std::string(text);
  if (text == "host") return source;
  if (absl::StartsWith(text, "dir:")) {
    source.kind = ImageSource::Kind::kDirectory;
    source.directory = std::string(text.substr(4));
    if (!absl::StartsWith(source.directory, "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", text, "\": dir: needs an absolute path"));
    }
    return source;
  }
  absl::StatusOr<images::Reference> reference = images::ParseReference(text);
  if (!reference.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        reference.status().message(), " (use \"host\", \"dir:/abs/path\" or an OCI reference)"));
  }
  source.kind = ImageSource::Kind::kOci;
  source.reference = *std::move(reference);
  return source;
}

}  // namespace zygo::runtime
