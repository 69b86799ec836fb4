// sha256 digests with nettle. Not OpenSSL: libcrypto's constructor probes the CPU at
// length, 0.07 ms of every start of the static `zygo` on these VMs (each CPUID traps to the
// hypervisor), and its EVP interface loads providers on first use. Nettle's own probe is a
// few CPUIDs (0.02 ms measured) and it loads nothing.
#include "images/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::images {
namespace {

constexpr absl::string_view kSha256Prefix = "sha256:";
constexpr size_t kSha256HexLength = 64;

std::string HexOf(const unsigned char* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    hex.push_back(kHex[bytes[i] >> 4]);
    hex.push_back(kHex[bytes[i] & 0xf]);
  }
  return hex;
}

}  // namespace

absl::Status ValidateDigest(absl::string_view digest) {
  size_t colon = digest.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid digest '", digest, "': expected sha256:<64 hex digits>"));
  }
  absl::string_view algorithm = digest.substr(0, colon);
  absl::string_view hex = digest.substr(colon + 1);
  if (algorithm != "sha256") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported digest algorithm '", algorithm,
                                                   "' in '", digest,
                                                   "': only sha256 is supported"));
  }
  if (hex.size() != kSha256HexLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid digest '", digest, "': ", hex.size(), " hex digits, expected 64"));
  }
  for (char c : hex) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) {
      return absl::InvalidArgumentError(absl::StrCat("invalid digest '", digest,
                                                     "': expected lowercase hex digits, found '",
                                                     std::string(1, c), "'"));
    }
  }
  return absl::OkStatus();
}

std::string DigestHex(absl::string_view digest) {
  if (!ValidateDigest(digest).ok()) return "";
  return std::string(digest.substr(kSha256Prefix.size()));
}

struct Sha256Hasher::State {
  sha256_ctx context;
};

Sha256Hasher::Sha256Hasher() : state_(std::make_unique<State>()) {
  sha256_init(&state_->context);
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::Update(const void* data, size_t size) {
  if (size == 0) return;
  sha256_update(&state_->context, size, static_cast<const uint8_t*>(data));
}

std::string Sha256Hasher::Finish() {
  unsigned char md[SHA256_DIGEST_SIZE];
  sha256_digest(&state_->context, sizeof(md), md);
  return absl::StrCat(kSha256Prefix, HexOf(md, sizeof(md)));
}

std::string Sha256Digest(absl::string_view bytes) {
  Sha256Hasher hasher;
  hasher.Update(bytes.data(), bytes.size());
  return hasher.Finish();
}

// Streams the file in 1 MiB reads, so a multi-gigabyte layer never sits in memory.
absl::StatusOr<std::string> Sha256DigestOfFile(const std::string& path) {
  int raw_fd;
  do {
    raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (raw_fd < 0 && errno == EINTR);
  if (raw_fd < 0)
    return base::LastErrnoStatus([&] { return absl::StrCat("open(", path, ", O_RDONLY)"); });
  base::UniqueFd fd(raw_fd);
  Sha256Hasher hasher;
  std::unique_ptr<char[]> buffer(new char[1 << 20]);
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.get(), 1 << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::LastErrnoStatus([&] { return absl::StrCat("read(", path, ")"); });
    if (n == 0) break;
    hasher.Update(buffer.get(), static_cast<size_t>(n));
  }
  return hasher.Finish();
}

}  // namespace zygo::images
