// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, whose first use
// is what this file avoids (see the header); they remain in libcrypto and compute the
// same function.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "images/internal/quick_sha256.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace zygo::images {

std::string QuickSha256Digest(absl::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_CTX context;
  SHA256_Init(&context);
  SHA256_Update(&context, bytes.data(), bytes.size());
  SHA256_Final(digest, &context);
  return absl::StrCat("sha256:", absl::BytesToHexString(absl::string_view(
                                     reinterpret_cast<const char*>(digest), sizeof(digest))));
}

}  // namespace zygo::images
