#include "images/run_image.h"

#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"

namespace zygo::images {
namespace {

// Finds `name` in a passwd- or group-format file; returns the field at `index` (2: the
// id, 3: passwd's primary gid).
absl::StatusOr<std::vector<std::string>> FindEntry(const std::string& file,
                                                   const std::string& name) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ':');
    if (fields.size() >= 3 && fields[0] == name) return fields;
  }
  return absl::NotFoundError(absl::StrCat("user or group '", name, "' is not in the image's ",
                                          file.substr(file.rfind("/etc/"))));
}

absl::StatusOr<uint32_t> ParseIdField(const std::string& text) {
  uint32_t id = 0;
  if (!absl::SimpleAtoi(text, &id)) {
    return absl::InvalidArgumentError(absl::StrCat("bad id '", text, "' in the image"));
  }
  return id;
}

}  // namespace

absl::StatusOr<std::optional<RunnableImage>> FindRunnableImage(const Store& store,
                                                               const Reference& ref) {
  ZYGO_ASSIGN_OR_RETURN(std::optional<ImageRecord> record, store.Find(ref.Canonical()));
  if (!record.has_value() || !store.HasRootfs(record->manifest_digest)) {
    return std::optional<RunnableImage>();
  }
  ZYGO_ASSIGN_OR_RETURN(std::string config_bytes, store.ReadBlob(record->config_digest));
  ZYGO_ASSIGN_OR_RETURN(ImageConfig config, ParseImageConfig(config_bytes));
  RunnableImage image;
  image.reference = record->reference;
  image.manifest_digest = record->manifest_digest;
  image.rootfs = store.RootfsPath(record->manifest_digest);
  image.config = std::move(config);
  return std::optional<RunnableImage>(std::move(image));
}

absl::StatusOr<NumericUser> ResolveImageUser(const std::string& rootfs, const std::string& user) {
  std::vector<std::string> parts = absl::StrSplit(user, absl::MaxSplits(':', 1));
  NumericUser result;
  uint32_t numeric = 0;
  if (absl::SimpleAtoi(parts[0], &numeric)) {
    result.uid = numeric;
    result.gid = numeric;
    // docker: a numeric user without a group gets the passwd entry's group, if any.
  } else {
    ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> entry,
                          FindEntry(rootfs + "/etc/passwd", parts[0]));
    if (entry.size() < 4) return absl::InvalidArgumentError("short /etc/passwd entry");
    ZYGO_ASSIGN_OR_RETURN(result.uid, ParseIdField(entry[2]));
    ZYGO_ASSIGN_OR_RETURN(result.gid, ParseIdField(entry[3]));
  }
  if (parts.size() == 2) {
    if (absl::SimpleAtoi(parts[1], &numeric)) {
      result.gid = numeric;
    } else {
      ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> group,
                            FindEntry(rootfs + "/etc/group", parts[1]));
      ZYGO_ASSIGN_OR_RETURN(result.gid, ParseIdField(group[2]));
    }
  }
  return result;
}

}  // namespace zygo::images
