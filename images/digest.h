// sha256 digests ("sha256:<64 lowercase hex>") of bytes, files and streams (nettle).
#ifndef ZYGO_IMAGES_DIGEST_H_
#define ZYGO_IMAGES_DIGEST_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

// Checks the form "sha256:" + 64 lowercase hex digits; other algorithms are refused.
absl::Status ValidateDigest(absl::string_view digest);

// The hex part of a valid digest.
std::string DigestHex(absl::string_view digest);

std::string Sha256Digest(absl::string_view bytes);
absl::StatusOr<std::string> Sha256DigestOfFile(const std::string& path);

// Incremental hashing for downloads and decompression.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void Update(const void* data, size_t size);
  std::string Finish();  // "sha256:<hex>"; the hasher may not be used afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_DIGEST_H_
