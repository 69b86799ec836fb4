#include "images/loader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "images/digest.h"
#include "images/layer_unpack.h"
#include "images/manifest.h"
#include "images/reference.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::StatusOr<Json> ParseJsonFile(const std::string& path) {
  ZYGO_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON"));
  return json;
}

// Copies a file into the store as blob `digest`, checking the digest on the way in.
absl::Status ImportBlobFile(Store& store, const std::string& file, const std::string& digest) {
  ZYGO_RETURN_IF_ERROR(ValidateDigest(digest));
  if (store.HasBlob(digest)) return absl::OkStatus();
  std::string temp = store.TempPath("blob");
  std::error_code ec;
  if (!fs::copy_file(file, temp, ec)) {
    return absl::InternalError(absl::StrCat("copy ", file, ": ", ec.message()));
  }
  absl::StatusOr<std::string> actual = Sha256DigestOfFile(temp);
  if (!actual.ok() || *actual != digest) {
    unlink(temp.c_str());
    if (!actual.ok()) return actual.status();
    return absl::DataLossError(
        absl::StrCat(file, " has digest ", *actual, ", but the image says ", digest));
  }
  return store.CommitBlobFile(digest, temp);
}

// The canonical reference an image is recorded under.
absl::StatusOr<std::string> RecordName(const std::string& annotated, const std::string& name) {
  std::string chosen = !name.empty() ? name : annotated;
  if (chosen.empty()) {
    return absl::InvalidArgumentError(
        "the archive does not name its image: give a name, e.g. zygo load PATH myimage:latest");
  }
  ZYGO_ASSIGN_OR_RETURN(Reference ref, ParseReference(chosen));
  return ref.Canonical();
}

absl::StatusOr<ImageRecord> LoadLayoutManifest(Store& store, const std::string& layout,
                                               const Descriptor& descriptor,
                                               const std::string& name, const StepFn& step) {
  auto blob = [&](const std::string& digest) {
    return absl::StrCat(layout, "/blobs/sha256/", DigestHex(digest));
  };
  ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, blob(descriptor.digest), descriptor.digest));
  ZYGO_ASSIGN_OR_RETURN(std::string bytes, store.ReadBlob(descriptor.digest));
  ZYGO_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(bytes, descriptor.media_type));
  std::string manifest_digest = descriptor.digest;
  if (manifest.is_index) {
    ZYGO_ASSIGN_OR_RETURN(Descriptor platform, SelectPlatform(manifest));
    ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, blob(platform.digest), platform.digest));
    ZYGO_ASSIGN_OR_RETURN(bytes, store.ReadBlob(platform.digest));
    ZYGO_ASSIGN_OR_RETURN(manifest, ParseManifest(bytes, platform.media_type));
    manifest_digest = platform.digest;
  }
  ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, blob(manifest.config.digest), manifest.config.digest));
  for (const Descriptor& layer : manifest.layers) {
    ZYGO_RETURN_IF_ERROR(CheckLayerMediaType(layer.media_type));
    ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, blob(layer.digest), layer.digest));
  }
  return MaterializeImage(store, name, manifest_digest, manifest, step);
}

absl::StatusOr<std::vector<ImageRecord>> LoadOciLayout(Store& store, const std::string& layout,
                                                       const std::string& name,
                                                       const StepFn& step) {
  ZYGO_ASSIGN_OR_RETURN(Json index, ParseJsonFile(layout + "/index.json"));
  if (!index.contains("manifests") || !index["manifests"].is_array() ||
      index["manifests"].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(layout, "/index.json lists no manifests"));
  }
  if (!name.empty() && index["manifests"].size() > 1) {
    return absl::InvalidArgumentError("the layout holds several images; load it without a name");
  }
  std::vector<ImageRecord> records;
  for (const Json& entry : index["manifests"]) {
    Descriptor descriptor;
    descriptor.media_type = entry.value("mediaType", "");
    descriptor.digest = entry.value("digest", "");
    std::string annotated;
    if (entry.contains("annotations") && entry["annotations"].is_object()) {
      annotated = entry["annotations"].value("org.opencontainers.image.ref.name", "");
    }
    // A bare tag ("latest") names nothing without a repository.
    if (!annotated.empty() && !absl::StrContains(annotated, "/") &&
        !absl::StrContains(annotated, ":")) {
      annotated.clear();
    }
    ZYGO_ASSIGN_OR_RETURN(std::string record_name, RecordName(annotated, name));
    ZYGO_ASSIGN_OR_RETURN(ImageRecord record,
                          LoadLayoutManifest(store, layout, descriptor, record_name, step));
    records.push_back(std::move(record));
  }
  return records;
}

// docker save: manifest.json lists Config and Layers (uncompressed tars) by path. The
// loader writes an OCI manifest for them, so the store only ever holds OCI manifests.
absl::StatusOr<std::vector<ImageRecord>> LoadDockerArchive(Store& store, const std::string& dir,
                                                           const std::string& name,
                                                           const StepFn& step) {
  ZYGO_ASSIGN_OR_RETURN(Json entries, ParseJsonFile(dir + "/manifest.json"));
  if (!entries.is_array() || entries.empty()) {
    return absl::InvalidArgumentError("manifest.json of the docker archive lists no image");
  }
  std::vector<ImageRecord> records;
  for (const Json& entry : entries) {
    Json oci = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"}};
    std::string config_path = dir + "/" + entry.value("Config", "");
    ZYGO_ASSIGN_OR_RETURN(std::string config_digest, Sha256DigestOfFile(config_path));
    ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, config_path, config_digest));
    oci["config"] = {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                     {"digest", config_digest},
                     {"size", fs::file_size(config_path)}};
    oci["layers"] = Json::array();
    for (const Json& layer : entry.value("Layers", Json::array())) {
      std::string layer_path = dir + "/" + layer.get<std::string>();
      ZYGO_ASSIGN_OR_RETURN(std::string digest, Sha256DigestOfFile(layer_path));
      ZYGO_RETURN_IF_ERROR(ImportBlobFile(store, layer_path, digest));
      oci["layers"].push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
                               {"digest", digest},
                               {"size", fs::file_size(layer_path)}});
    }
    std::string bytes = oci.dump();
    std::string manifest_digest = Sha256Digest(bytes);
    ZYGO_RETURN_IF_ERROR(store.PutBlob(manifest_digest, bytes));
    ZYGO_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(bytes, ""));
    std::string tag;
    if (entry.contains("RepoTags") && entry["RepoTags"].is_array() && !entry["RepoTags"].empty()) {
      tag = entry["RepoTags"][0].get<std::string>();
    }
    ZYGO_ASSIGN_OR_RETURN(std::string record_name, RecordName(tag, name));
    ZYGO_ASSIGN_OR_RETURN(ImageRecord record,
                          MaterializeImage(store, record_name, manifest_digest, manifest, step));
    records.push_back(std::move(record));
  }
  return records;
}

absl::StatusOr<std::vector<ImageRecord>> LoadDirectory(Store& store, const std::string& dir,
                                                       const std::string& name,
                                                       const StepFn& step) {
  if (fs::exists(dir + "/oci-layout") && fs::exists(dir + "/index.json")) {
    return LoadOciLayout(store, dir, name, step);
  }
  if (fs::exists(dir + "/manifest.json")) return LoadDockerArchive(store, dir, name, step);
  return absl::InvalidArgumentError(
      absl::StrCat(dir,
                   " is neither an OCI layout (oci-layout, index.json) nor a docker archive "
                   "(manifest.json)"));
}

}  // namespace

absl::StatusOr<std::vector<ImageRecord>> LoadImages(Store& store, const std::string& path,
                                                    const std::string& name, const StepFn& step) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return base::ErrnoStatus(errno, absl::StrCat("load ", path));
  if (S_ISDIR(st.st_mode)) return LoadDirectory(store, path, name, step);
  // An archive: unpack it safely into the store's tmp/ first, then load that.
  if (step) step(absl::StrCat("reading ", path));
  std::string temp = store.TempPath("load");
  if (mkdir(temp.c_str(), 0700) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", temp, ")"));
  }
  absl::StatusOr<UnpackResult> unpacked = UnpackLayer(path, temp);
  absl::StatusOr<std::vector<ImageRecord>> records =
      unpacked.ok() ? LoadDirectory(store, temp, name, step) : unpacked.status();
  std::error_code ignored;
  fs::remove_all(temp, ignored);
  return records;
}

}  // namespace zygo::images
