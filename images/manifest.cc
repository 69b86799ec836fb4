// Parses OCI / Docker schema 2 manifests, indexes and image configs with nlohmann-json.
// Every lookup checks the JSON type first and the whole parse sits in a try block, so
// malformed input of any shape becomes an InvalidArgument Status, never an exception.
#include "images/manifest.h"

#include <sys/utsname.h>

#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

using Json = nlohmann::json;

constexpr char kOciManifest[] = "application/vnd.oci.image.manifest.v1+json";
constexpr char kOciIndex[] = "application/vnd.oci.image.index.v1+json";
constexpr char kDockerManifest[] = "application/vnd.docker.distribution.manifest.v2+json";
constexpr char kDockerManifestList[] = "application/vnd.docker.distribution.manifest.list.v2+json";

enum class Kind { kUnknown, kManifest, kIndex };

Kind KindOf(absl::string_view media_type) {
  if (media_type == kOciManifest || media_type == kDockerManifest) return Kind::kManifest;
  if (media_type == kOciIndex || media_type == kDockerManifestList) return Kind::kIndex;
  return Kind::kUnknown;
}

// "type/subtype; charset=utf-8" -> "type/subtype", lowercased (media types are
// case-insensitive, RFC 6838).
std::string BareMediaType(absl::string_view content_type) {
  absl::string_view bare = content_type.substr(0, content_type.find(';'));
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(bare));
}

// Thrown only inside this file and caught in the public functions: it lets the field
// readers stay one line each while the error still names the field.
struct ParseError {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw ParseError{std::move(message)}; }

std::string GetString(const Json& object, const char* key, absl::string_view where,
                      bool required = false) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) Fail(absl::StrCat(where, " has no \"", key, "\""));
    return "";
  }
  if (!it->is_string()) Fail(absl::StrCat(where, ".", key, " is not a string"));
  return it->get<std::string>();
}

std::vector<std::string> GetStringArray(const Json& object, const char* key,
                                        absl::string_view where) {
  std::vector<std::string> values;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return values;
  if (!it->is_array()) Fail(absl::StrCat(where, ".", key, " is not an array"));
  for (const Json& value : *it) {
    if (!value.is_string()) Fail(absl::StrCat(where, ".", key, " has a non-string entry"));
    values.push_back(value.get<std::string>());
  }
  return values;
}

const Json& GetObject(const Json& object, const char* key, absl::string_view where) {
  auto it = object.find(key);
  if (it == object.end()) Fail(absl::StrCat(where, " has no \"", key, "\""));
  if (!it->is_object()) Fail(absl::StrCat(where, ".", key, " is not an object"));
  return *it;
}

const Json& GetArray(const Json& object, const char* key, absl::string_view where) {
  auto it = object.find(key);
  if (it == object.end()) Fail(absl::StrCat(where, " has no \"", key, "\""));
  if (!it->is_array()) Fail(absl::StrCat(where, ".", key, " is not an array"));
  return *it;
}

Descriptor ParseDescriptor(const Json& json, const std::string& where) {
  if (!json.is_object()) Fail(absl::StrCat(where, " is not an object"));
  Descriptor descriptor;
  descriptor.media_type = GetString(json, "mediaType", where);
  descriptor.digest = GetString(json, "digest", where, /*required=*/true);
  absl::Status digest_ok = ValidateDigest(descriptor.digest);
  if (!digest_ok.ok()) Fail(absl::StrCat(where, ": ", digest_ok.message()));
  auto size = json.find("size");
  if (size == json.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    Fail(absl::StrCat(where, ".size is missing or not a non-negative integer"));
  }
  descriptor.size = size->get<int64_t>();
  auto platform = json.find("platform");
  if (platform != json.end() && !platform->is_null()) {
    if (!platform->is_object()) Fail(absl::StrCat(where, ".platform is not an object"));
    std::string here = absl::StrCat(where, ".platform");
    descriptor.os = GetString(*platform, "os", here);
    descriptor.architecture = GetString(*platform, "architecture", here);
    descriptor.variant = GetString(*platform, "variant", here);
  }
  return descriptor;
}

// Which kind of document this is: the Content-Type when it names one of ours, else the
// document's mediaType, else its shape. A document whose own mediaType contradicts the
// Content-Type is refused (the OCI spec added the field to stop that confusion).
Kind DecideKind(const Json& json, absl::string_view content_type) {
  std::string declared = BareMediaType(GetString(json, "mediaType", "the manifest"));
  std::string sent = BareMediaType(content_type);
  if (absl::StartsWith(sent, "application/vnd.docker.distribution.manifest.v1") ||
      absl::StartsWith(declared, "application/vnd.docker.distribution.manifest.v1")) {
    Fail(
        "Docker schema 1 manifests are not supported (push the image again with a current "
        "client)");
  }
  Kind from_header = KindOf(sent);
  Kind from_document = KindOf(declared);
  if (from_header != Kind::kUnknown && !declared.empty() && declared != sent) {
    Fail(
        absl::StrCat("the registry sent Content-Type ", sent, " but the document says ", declared));
  }
  if (from_header != Kind::kUnknown) return from_header;
  if (from_document != Kind::kUnknown) return from_document;
  if (!declared.empty()) Fail(absl::StrCat("unsupported manifest media type ", declared));
  if (json.contains("manifests")) return Kind::kIndex;
  if (json.contains("config") && json.contains("layers")) return Kind::kManifest;
  Fail("the document is neither an image manifest nor an index");
}

Manifest ParseManifestJson(const Json& json, absl::string_view content_type) {
  if (!json.is_object()) Fail("the manifest is not a JSON object");
  auto version = json.find("schemaVersion");
  if (version != json.end() && version->is_number_integer() && version->get<int64_t>() == 1) {
    Fail(
        "Docker schema 1 manifests are not supported (push the image again with a current "
        "client)");
  }
  if (version != json.end() && (!version->is_number_integer() || version->get<int64_t>() != 2)) {
    Fail(absl::StrCat("unsupported schemaVersion ", version->dump(), " (expected 2)"));
  }
  Manifest manifest;
  if (DecideKind(json, content_type) == Kind::kIndex) {
    manifest.is_index = true;
    const Json& entries = GetArray(json, "manifests", "the index");
    for (size_t i = 0; i < entries.size(); ++i) {
      manifest.manifests.push_back(ParseDescriptor(entries[i], absl::StrCat("manifests[", i, "]")));
    }
    return manifest;
  }
  manifest.config = ParseDescriptor(GetObject(json, "config", "the manifest"), "config");
  const Json& layers = GetArray(json, "layers", "the manifest");
  for (size_t i = 0; i < layers.size(); ++i) {
    manifest.layers.push_back(ParseDescriptor(layers[i], absl::StrCat("layers[", i, "]")));
  }
  return manifest;
}

ImageConfig ParseImageConfigJson(const Json& json) {
  if (!json.is_object()) Fail("the image config is not a JSON object");
  ImageConfig config;
  config.architecture = GetString(json, "architecture", "the config");
  config.os = GetString(json, "os", "the config");
  auto settings = json.find("config");
  if (settings != json.end() && !settings->is_null()) {
    if (!settings->is_object()) Fail("config.config is not an object");
    config.env = GetStringArray(*settings, "Env", "config");
    config.working_dir = GetString(*settings, "WorkingDir", "config");
    config.entrypoint = GetStringArray(*settings, "Entrypoint", "config");
    config.cmd = GetStringArray(*settings, "Cmd", "config");
    config.user = GetString(*settings, "User", "config");
  }
  const Json& rootfs = GetObject(json, "rootfs", "the image config");
  std::string type = GetString(rootfs, "type", "rootfs");
  if (!type.empty() && type != "layers") {
    Fail(absl::StrCat("rootfs.type is \"", type, "\", expected \"layers\""));
  }
  auto diff_ids = rootfs.find("diff_ids");
  if (diff_ids == rootfs.end() || diff_ids->is_null()) {
    Fail("the image config has no rootfs.diff_ids");
  }
  config.diff_ids = GetStringArray(rootfs, "diff_ids", "rootfs");
  for (size_t i = 0; i < config.diff_ids.size(); ++i) {
    absl::Status ok = ValidateDigest(config.diff_ids[i]);
    if (!ok.ok()) Fail(absl::StrCat("rootfs.diff_ids[", i, "]: ", ok.message()));
  }
  return config;
}

// Runs `parse` on `bytes`, turning every failure into InvalidArgument prefixed `what`.
template <typename T, typename ParseFn>
absl::StatusOr<T> Guarded(absl::string_view bytes, absl::string_view what, ParseFn parse) {
  try {
    Json json = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid ", what, ": not valid JSON"));
    }
    return parse(json);
  } catch (const ParseError& error) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", what, ": ", error.message));
  } catch (const std::exception& error) {  // nlohmann's, should a check above miss one
    return absl::InvalidArgumentError(absl::StrCat("invalid ", what, ": ", error.what()));
  }
}

std::string PlatformName(const Descriptor& entry) {
  std::string name = absl::StrCat(entry.os.empty() ? "?" : entry.os, "/",
                                  entry.architecture.empty() ? "?" : entry.architecture);
  if (!entry.variant.empty()) absl::StrAppend(&name, "/", entry.variant);
  return name;
}

// Among entries for the same os/arch, the one whose variant suits this machine best:
// lower is better, -1 means never. A requested variant must match exactly.
int VariantRank(absl::string_view arch, absl::string_view wanted, absl::string_view variant) {
  if (!wanted.empty()) return variant == wanted ? 0 : -1;
  if (arch == "arm64") return (variant.empty() || variant == "v8") ? 0 : 1;
  if (arch == "arm") return variant == "v7" ? 0 : variant.empty() ? 1 : 2;  // most 32-bit hosts
  return variant.empty() ? 0 : 1;
}

}  // namespace

const char* const kManifestMediaTypes[] = {kOciManifest, kOciIndex, kDockerManifest,
                                           kDockerManifestList, nullptr};

std::string ManifestAcceptHeader() {
  std::vector<absl::string_view> types;
  for (const char* const* type = kManifestMediaTypes; *type != nullptr; ++type) {
    types.push_back(*type);
  }
  return absl::StrJoin(types, ", ");
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view bytes, absl::string_view media_type) {
  return Guarded<Manifest>(bytes, "manifest",
                           [&](const Json& json) { return ParseManifestJson(json, media_type); });
}

absl::StatusOr<Descriptor> SelectPlatform(const Manifest& index, absl::string_view arch) {
  if (!index.is_index) {
    return absl::InvalidArgumentError("SelectPlatform needs an image index or manifest list");
  }
  std::string wanted_arch = arch.empty() ? HostArchitecture() : std::string(arch);
  // "arm/v7" asks for a variant too.
  std::string wanted_variant;
  if (size_t slash = wanted_arch.find('/'); slash != std::string::npos) {
    wanted_variant = wanted_arch.substr(slash + 1);
    wanted_arch.resize(slash);
  }
  const Descriptor* best = nullptr;
  int best_rank = -1;
  std::vector<std::string> available;
  for (const Descriptor& entry : index.manifests) {
    // Attestations and signatures sit in indexes as unknown/unknown; they are not images.
    if (entry.os == "unknown" && entry.architecture == "unknown") continue;
    available.push_back(PlatformName(entry));
    if (entry.os != "linux" || entry.architecture != wanted_arch) continue;
    if (!entry.media_type.empty() && KindOf(entry.media_type) != Kind::kManifest) continue;
    int rank = VariantRank(wanted_arch, wanted_variant, entry.variant);
    if (rank >= 0 && (best == nullptr || rank < best_rank)) {
      best = &entry;
      best_rank = rank;
    }
  }
  if (best != nullptr) return *best;
  std::string wanted = absl::StrCat("linux/", wanted_arch);
  if (!wanted_variant.empty()) absl::StrAppend(&wanted, "/", wanted_variant);
  return absl::NotFoundError(
      absl::StrCat("the image has no ", wanted, " manifest; available: ",
                   available.empty() ? std::string("none") : absl::StrJoin(available, ", ")));
}

std::string HostArchitecture() {
  struct utsname name;
  if (uname(&name) != 0) return "unknown";
  absl::string_view machine = name.machine;
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64" || machine == "arm64" || machine == "aarch64_be") return "arm64";
  if (absl::StartsWith(machine, "arm")) return "arm";
  if (machine == "i386" || machine == "i486" || machine == "i586" || machine == "i686") {
    return "386";
  }
  if (machine == "mips") return "mips";
  if (machine == "mips64") return "mips64";
  if (machine == "loongarch64") return "loong64";
  // ppc64le, ppc64, s390x, riscv64 and mips64le are spelled the same by OCI and uname.
  return std::string(machine);
}

absl::StatusOr<ImageConfig> ParseImageConfig(absl::string_view bytes) {
  return Guarded<ImageConfig>(bytes, "image config", ParseImageConfigJson);
}

absl::Status CheckLayerMediaType(absl::string_view media_type) {
  static constexpr absl::string_view kSupported[] = {
      "application/vnd.oci.image.layer.v1.tar",
      "application/vnd.oci.image.layer.v1.tar+gzip",
      "application/vnd.oci.image.layer.v1.tar+zstd",
      "application/vnd.docker.image.rootfs.diff.tar.gzip",
  };
  for (absl::string_view supported : kSupported) {
    if (media_type == supported) return absl::OkStatus();
  }
  if (absl::StrContains(media_type, "nondistributable") ||
      absl::StrContains(media_type, "foreign")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layer media type ", media_type,
        " is a non-distributable (foreign) layer: its content is not in the registry and "
        "zygo does not fetch it from elsewhere"));
  }
  if (media_type.empty()) return absl::InvalidArgumentError("a layer has no media type");
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported layer media type ", media_type,
                   " (zygo unpacks OCI tar, tar+gzip, tar+zstd and Docker rootfs.diff.tar.gzip "
                   "layers)"));
}

}  // namespace zygo::images
