// Image references as docker writes them: "python:3.12-slim" means
// docker.io/library/python:3.12-slim; "127.0.0.1:5000/team/app:v1"; "name@sha256:...".
#ifndef ZYGO_IMAGES_REFERENCE_H_
#define ZYGO_IMAGES_REFERENCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

struct Reference {
  std::string registry;    // "docker.io", "127.0.0.1:5000", "ghcr.io"
  std::string repository;  // "library/python", "team/app"
  std::string tag;         // "3.12-slim"; "latest" when neither tag nor digest is given
  std::string digest;      // "sha256:<64 hex>" or empty

  // The registry's API host: docker.io is served at registry-1.docker.io.
  std::string ApiHost() const;
  // "docker.io/library/python:3.12-slim" (with "@digest" when there is one).
  std::string Canonical() const;
  // What `zygo images` shows: "python:3.12-slim" for Docker Hub's library, else Canonical().
  std::string Familiar() const;
};

// Parses a reference; the error names what is wrong ("invalid reference 'Python': repository
// names must be lowercase").
absl::StatusOr<Reference> ParseReference(absl::string_view text);

// Whether `registry` ("localhost:5000", "127.0.0.1:5000", "[::1]:5000") is on loopback,
// where docker reaches a registry over plain HTTP by default.
bool IsLoopbackRegistry(absl::string_view registry);

// --tls-verify. kDefault is docker's rule: plain HTTP to a registry on loopback, HTTPS
// with the certificate checked elsewhere. kTrue is HTTPS everywhere, kFalse plain HTTP.
enum class TlsVerify { kDefault, kTrue, kFalse };

// How to reach `registry` when the operator named `insecure` registries ("HOST[:PORT]",
// as a reference spells its registry; zygo serve --insecure-registry): plain HTTP to one
// of those, else docker's rule (kDefault). As docker's insecure-registries, a name without
// a port covers that host on every port.
TlsVerify TlsVerifyFor(absl::string_view registry, const std::vector<std::string>& insecure);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_REFERENCE_H_
