// A client for the OCI distribution API (libcurl): manifests and blobs, with anonymous
// Bearer tokens (the WWW-Authenticate challenge), Basic auth, redirects (blobs often live
// on a CDN), and plain HTTP only where the caller allows it. Every manifest and blob is
// checked against its sha256 before it is returned or committed. Parent side.
#ifndef ZYGO_IMAGES_REGISTRY_CLIENT_H_
#define ZYGO_IMAGES_REGISTRY_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "images/reference.h"

namespace zygo::images {

struct Credentials {
  std::string username;
  std::string password;  // or an identity token
};

struct RegistryOptions {
  // Registries ("127.0.0.1:5000") reached over plain HTTP. --tls-verify=false adds the
  // registry of the reference being pulled.
  std::vector<std::string> insecure_registries;
  // Docker's default: a registry on loopback is reached over plain HTTP too.
  // --tls-verify=true turns it off.
  bool plain_http_on_loopback = true;
  // Per-registry credentials (from `zygo login`, ~/.docker/config.json, auth.json).
  std::map<std::string, Credentials> credentials;
  std::string user_agent = "zygo/0.1";
  long connect_timeout_seconds = 15;
};

struct FetchedManifest {
  std::string bytes;
  std::string media_type;  // Content-Type
  std::string digest;      // sha256 of bytes (checked against the reference's digest if any)
};

// Called as bytes arrive: (bytes so far, total or -1).
using ProgressFn = std::function<void(int64_t, int64_t)>;

class RegistryClient {
 public:
  explicit RegistryClient(RegistryOptions options);
  ~RegistryClient();
  RegistryClient(RegistryClient&&) noexcept;
  RegistryClient& operator=(RegistryClient&&) noexcept;

  // GET /v2/<repo>/manifests/<tag or digest> with every manifest type in Accept.
  // NotFound for an unknown tag ("manifest unknown"), Unauthenticated/PermissionDenied
  // for auth failures, DataLoss for a digest mismatch; each message names the reference.
  absl::StatusOr<FetchedManifest> GetManifest(const Reference& ref,
                                              const std::string& tag_or_digest);

  // Downloads a blob into `dest_file` (created, truncated), checking size and sha256
  // while streaming. DataLoss on a mismatch (and `dest_file` is removed).
  absl::Status DownloadBlob(const Reference& ref, const std::string& digest, int64_t size,
                            const std::string& dest_file, const ProgressFn& progress = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads credentials Zygo may use, in order: Zygo's own (`zygo login`, <zygo config>/auth.json),
// $DOCKER_CONFIG/config.json or ~/.docker/config.json ("auths" base64 user:pass),
// $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json. Read-only for the last two.
absl::StatusOr<std::map<std::string, Credentials>> LoadCredentials();

// `zygo login`: stores credentials for `registry` in Zygo's own auth.json, mode 0600,
// written atomically.
absl::Status SaveCredentials(const std::string& registry, const Credentials& credentials);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_REGISTRY_CLIENT_H_
