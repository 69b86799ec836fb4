#include "images/internal/images_json.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kImagesVersion = 1;

Json RecordToJson(const ImageRecord& record) {
  return Json{{"reference", record.reference},         {"manifest_digest", record.manifest_digest},
              {"config_digest", record.config_digest}, {"layer_digests", record.layer_digests},
              {"diff_ids", record.diff_ids},           {"size_bytes", record.size_bytes},
              {"created_unix", record.created_unix}};
}

}  // namespace

absl::Status ValidateRecord(const ImageRecord& record) {
  if (record.reference.empty()) return absl::InvalidArgumentError("image record has no reference");
  std::vector<std::string> digests = {record.manifest_digest, record.config_digest};
  digests.insert(digests.end(), record.layer_digests.begin(), record.layer_digests.end());
  digests.insert(digests.end(), record.diff_ids.begin(), record.diff_ids.end());
  for (const std::string& digest : digests) {
    absl::Status ok = ValidateDigest(digest);
    if (!ok.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(record.reference, ": ", ok.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ImageRecord>> ParseImagesJson(const std::string& text,
                                                         const std::string& path) {
  std::vector<ImageRecord> records;
  try {
    Json json = Json::parse(text);
    int version = json.at("version").get<int>();
    if (version != kImagesVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " has version ", version, "; this zygo reads version ", kImagesVersion));
    }
    for (const Json& entry : json.at("images")) {
      ImageRecord record;
      record.reference = entry.at("reference").get<std::string>();
      record.manifest_digest = entry.at("manifest_digest").get<std::string>();
      record.config_digest = entry.at("config_digest").get<std::string>();
      record.layer_digests = entry.at("layer_digests").get<std::vector<std::string>>();
      record.diff_ids = entry.at("diff_ids").get<std::vector<std::string>>();
      record.size_bytes = entry.at("size_bytes").get<int64_t>();
      record.created_unix = entry.at("created_unix").get<int64_t>();
      absl::Status ok = ValidateRecord(record);
      if (!ok.ok()) return absl::DataLossError(absl::StrCat(path, " is damaged: ", ok.message()));
      records.push_back(std::move(record));
    }
  } catch (const Json::exception& error) {
    return absl::DataLossError(absl::StrCat(path, " is damaged: ", error.what()));
  }
  return records;
}

std::string ImagesJsonText(const std::vector<ImageRecord>& records) {
  Json images = Json::array();
  for (const ImageRecord& record : records) images.push_back(RecordToJson(record));
  Json json = {{"version", kImagesVersion}, {"images", std::move(images)}};
  return json.dump(2) + "\n";
}

}  // namespace zygo::images
