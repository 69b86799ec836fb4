#include "images/materialize.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "images/layer_flatten.h"
#include "images/layer_unpack.h"

namespace zygo::images {
namespace {

// A sandbox's root is mounted read-only, so the places zygo mounts over must exist in
// the flattened root; an image without them (scratch images often lack /proc) gets
// empty directories. The store owns this copy, so nothing of the user's changes.
absl::Status AddMountpoints(const std::string& rootfs) {
  for (const char* dir : {"dev", "proc", "tmp"}) {
    std::string path = absl::StrCat(rootfs, "/", dir);
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "image has /", dir, " as something other than a directory; zygo mounts over it"));
    }
    if (mkdir(path.c_str(), 0755) != 0) {
      return base::ErrnoStatus(errno, absl::StrCat("mkdir(", path, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status EnsureLayer(Store& store, const Descriptor& layer, const std::string& diff_id,
                         const StepFn& step) {
  if (store.HasLayer(diff_id)) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(CheckLayerMediaType(layer.media_type));
  if (step) step(absl::StrCat("unpacking ", layer.digest.substr(0, 19)));
  std::string temp = store.TempPath("layer");
  if (mkdir(temp.c_str(), 0755) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", temp, ")"));
  }
  UnpackOptions options;
  options.allow_devices = geteuid() == 0;
  absl::StatusOr<UnpackResult> unpacked = UnpackLayer(store.BlobPath(layer.digest), temp, options);
  if (unpacked.ok() && unpacked->diff_id != diff_id) {
    unpacked =
        absl::DataLossError(absl::StrCat("layer ", layer.digest, " unpacks to ", unpacked->diff_id,
                                         ", but the config says ", diff_id));
  }
  if (!unpacked.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp, ignored);
    return unpacked.status();
  }
  return store.CommitLayerDir(diff_id, temp);
}

absl::Status EnsureRootfs(Store& store, const std::string& manifest_digest,
                          const std::vector<std::string>& diff_ids, const StepFn& step) {
  if (store.HasRootfs(manifest_digest)) return absl::OkStatus();
  if (step) step("flattening layers");
  std::vector<std::string> layer_dirs;
  for (const std::string& diff_id : diff_ids) layer_dirs.push_back(store.LayerPath(diff_id));
  std::string temp = store.TempPath("rootfs");
  if (mkdir(temp.c_str(), 0755) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", temp, ")"));
  }
  absl::Status flattened = FlattenLayers(layer_dirs, temp);
  if (flattened.ok()) flattened = AddMountpoints(temp);
  if (!flattened.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp, ignored);
    return flattened;
  }
  return store.CommitRootfsDir(manifest_digest, temp);
}

}  // namespace

absl::StatusOr<ImageRecord> MaterializeImage(Store& store, const std::string& reference,
                                             const std::string& manifest_digest,
                                             const Manifest& manifest, const StepFn& step) {
  ZYGO_ASSIGN_OR_RETURN(std::string config_bytes, store.ReadBlob(manifest.config.digest));
  ZYGO_ASSIGN_OR_RETURN(ImageConfig config, ParseImageConfig(config_bytes));
  if (config.diff_ids.size() != manifest.layers.size()) {
    return absl::DataLossError(absl::StrCat("image ", reference, ": the manifest lists ",
                                            manifest.layers.size(), " layers, the config ",
                                            config.diff_ids.size()));
  }
  ImageRecord record;
  record.reference = reference;
  record.manifest_digest = manifest_digest;
  record.config_digest = manifest.config.digest;
  record.diff_ids = config.diff_ids;
  record.size_bytes = manifest.config.size;
  for (size_t i = 0; i < manifest.layers.size(); ++i) {
    ZYGO_RETURN_IF_ERROR(EnsureLayer(store, manifest.layers[i], config.diff_ids[i], step));
    record.layer_digests.push_back(manifest.layers[i].digest);
    record.size_bytes += manifest.layers[i].size;
  }
  ZYGO_RETURN_IF_ERROR(EnsureRootfs(store, manifest_digest, config.diff_ids, step));
  record.created_unix = static_cast<int64_t>(time(nullptr));
  ZYGO_RETURN_IF_ERROR(store.Record(record));
  return record;
}

}  // namespace zygo::images
