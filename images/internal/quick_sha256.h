// sha256 for keys that `zygo run` computes on every run (the bytecode root's, a venv's).
// OpenSSL's EVP interface initialises its providers and reads openssl.cnf on first use,
// about 1.2 ms per process (0.5 ms without the config) against a one-shot run of a few
// ms; the low-level SHA256_* functions do neither and hash a short key in ~10 us.
#ifndef ZYGO_IMAGES_INTERNAL_QUICK_SHA256_H_
#define ZYGO_IMAGES_INTERNAL_QUICK_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace zygo::images {

// "sha256:<64 lowercase hex digits>" of `bytes`, the same value as Sha256Digest (digest.h).
std::string QuickSha256Digest(absl::string_view bytes);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_QUICK_SHA256_H_
