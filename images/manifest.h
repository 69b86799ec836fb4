// OCI and Docker v2 schema 2 manifests, image indexes / manifest lists, and the image
// config. Parsing only (nlohmann-json); no I/O.
#ifndef ZYGO_IMAGES_MANIFEST_H_
#define ZYGO_IMAGES_MANIFEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

// Every manifest media type a registry may answer with; sent in Accept.
extern const char* const kManifestMediaTypes[];  // nullptr-terminated
std::string ManifestAcceptHeader();

struct Descriptor {
  std::string media_type;
  std::string digest;
  int64_t size = 0;
  std::string os, architecture, variant;  // index entries only
};

struct Manifest {
  bool is_index = false;
  std::vector<Descriptor> manifests;  // index: the platform entries
  Descriptor config;                  // image manifest
  std::vector<Descriptor> layers;     // image manifest, bottom first
};

// Parses a manifest or index. `media_type` is the Content-Type the registry sent (may be
// empty; then the document's own mediaType or shape decides).
absl::StatusOr<Manifest> ParseManifest(absl::string_view bytes, absl::string_view media_type);

// The index entry for linux/<arch> (the host's arch when empty: "amd64", "arm64", ...).
absl::StatusOr<Descriptor> SelectPlatform(const Manifest& index, absl::string_view arch = "");

// The host's architecture as OCI spells it.
std::string HostArchitecture();

struct ImageConfig {
  std::vector<std::string> env;  // KEY=VALUE
  std::string working_dir;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;                   // "1000", "1000:1000", "app" (names need /etc/passwd)
  std::vector<std::string> diff_ids;  // rootfs.diff_ids, bottom first
  std::string architecture, os;
};

absl::StatusOr<ImageConfig> ParseImageConfig(absl::string_view bytes);

// Whether a layer's media type is gzip, zstd or uncompressed tar (libarchive detects the
// filter anyway; unknown foreign/non-distributable types are refused).
absl::Status CheckLayerMediaType(absl::string_view media_type);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_MANIFEST_H_
