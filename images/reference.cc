// Parses image references with docker's normalisation rules (distribution/reference).
#include "images/reference.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace zygo::images {
namespace {

constexpr absl::string_view kDockerHub = "docker.io";
constexpr absl::string_view kDockerHubApiHost = "registry-1.docker.io";
constexpr absl::string_view kDockerHubLegacy = "index.docker.io";
constexpr absl::string_view kLibraryPrefix = "library/";
constexpr size_t kMaxNameLength = 255;  // docker's NameTotalLengthMax
constexpr size_t kMaxTagLength = 128;

bool IsLowerAlnum(char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z'); }

// One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
bool IsValidPathComponent(absl::string_view component) {
  if (component.empty() || !IsLowerAlnum(component.front()) || !IsLowerAlnum(component.back())) {
    return false;
  }
  size_t i = 0;
  while (i < component.size()) {
    if (IsLowerAlnum(component[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < component.size() && !IsLowerAlnum(component[i])) ++i;
    absl::string_view separator = component.substr(start, i - start);
    bool dashes = separator.find_first_not_of('-') == absl::string_view::npos;
    if (separator != "." && separator != "_" && separator != "__" && !dashes) return false;
  }
  return true;
}

// One DNS label: [A-Za-z0-9] or [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9].
bool IsValidHostLabel(absl::string_view label) {
  if (label.empty() || label.front() == '-' || label.back() == '-') return false;
  for (char c : label) {
    if (!absl::ascii_isalnum(c) && c != '-') return false;
  }
  return true;
}

// host[:port], where host is DNS labels joined by '.', or a bracketed IPv6 address.
bool IsValidRegistry(absl::string_view registry) {
  absl::string_view host = registry;
  absl::string_view port;
  if (absl::StartsWith(host, "[")) {
    size_t close = host.find(']');
    if (close == absl::string_view::npos || close < 3) return false;
    for (char c : host.substr(1, close - 1)) {
      if (!absl::ascii_isxdigit(c) && c != ':') return false;
    }
    absl::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return false;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    size_t colon = host.find(':');
    if (colon != absl::string_view::npos) {
      port = host.substr(colon + 1);
      if (port.empty()) return false;
      host = host.substr(0, colon);
    }
    size_t start = 0;
    for (;;) {
      size_t dot = host.find('.', start);
      absl::string_view label =
          host.substr(start, dot == absl::string_view::npos ? dot : dot - start);
      if (!IsValidHostLabel(label)) return false;
      if (dot == absl::string_view::npos) break;
      start = dot + 1;
    }
  }
  for (char c : port) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return true;
}

// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool IsValidTag(absl::string_view tag) {
  if (tag.empty() || tag.size() > kMaxTagLength || tag.front() == '.' || tag.front() == '-') {
    return false;
  }
  for (char c : tag) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// Only sha256 is pulled, so only sha256 is accepted (digest.h has the same rule; this
// target does not depend on OpenSSL).
absl::Status CheckDigest(absl::string_view digest) {
  if (!absl::StartsWith(digest, "sha256:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("digest '", digest, "' is not sha256:<64 hex digits>"));
  }
  absl::string_view hex = digest.substr(7);
  if (hex.size() != 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("digest '", digest, "' has ", hex.size(), " hex digits, expected 64"));
  }
  for (char c : hex) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) {
      return absl::InvalidArgumentError(
          absl::StrCat("digest '", digest, "' must be lowercase hex digits"));
    }
  }
  return absl::OkStatus();
}

// docker's splitDockerDomain: the first component names a registry only when it looks
// like a host ("." or ":") or is "localhost"; otherwise the name is on Docker Hub.
absl::Status SplitName(absl::string_view name, Reference& ref) {
  size_t slash = name.find('/');
  absl::string_view first = name.substr(0, slash);
  absl::string_view remainder = name;
  if (slash != absl::string_view::npos &&
      (absl::StrContains(first, '.') || absl::StrContains(first, ':') || first == "localhost")) {
    if (!IsValidRegistry(first)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid registry '", first, "'"));
    }
    ref.registry = std::string(first);
    remainder = name.substr(slash + 1);
  } else {
    ref.registry = std::string(kDockerHub);
  }
  if (ref.registry == kDockerHubLegacy) ref.registry = std::string(kDockerHub);
  if (remainder.empty()) return absl::InvalidArgumentError("the repository name is empty");
  if (absl::AsciiStrToLower(remainder) != remainder) {
    return absl::InvalidArgumentError("repository names must be lowercase");
  }
  size_t start = 0;
  for (;;) {
    size_t next = remainder.find('/', start);
    absl::string_view component =
        remainder.substr(start, next == absl::string_view::npos ? next : next - start);
    if (!IsValidPathComponent(component)) {
      return absl::InvalidArgumentError(
          component.empty()
              ? std::string("empty path component in the repository name")
              : absl::StrCat("invalid repository name component '", component,
                             "' (use a-z, 0-9 and single '.', '_', '__' or '-' separators)"));
    }
    if (next == absl::string_view::npos) break;
    start = next + 1;
  }
  ref.repository = std::string(remainder);
  if (ref.registry == kDockerHub && !absl::StrContains(remainder, '/')) {
    ref.repository = absl::StrCat(kLibraryPrefix, remainder);
  }
  if (ref.registry.size() + 1 + remainder.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("the name is longer than ", kMaxNameLength, " characters"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Reference> Parse(absl::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("the reference is empty");
  Reference ref;
  absl::string_view rest = text;
  size_t at = rest.find('@');
  if (at != absl::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    absl::Status digest_ok = CheckDigest(ref.digest);
    if (!digest_ok.ok()) return digest_ok;
  }
  // A tag follows the last ':' after the last '/'; an earlier ':' is a registry port.
  size_t last_slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != absl::string_view::npos &&
      (last_slash == absl::string_view::npos || colon > last_slash)) {
    absl::string_view tag = rest.substr(colon + 1);
    if (!IsValidTag(tag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid tag '", tag, "' (use [A-Za-z0-9_][A-Za-z0-9_.-], at most 128 characters)"));
    }
    ref.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return absl::InvalidArgumentError("the repository name is empty");
  absl::Status name_ok = SplitName(rest, ref);
  if (!name_ok.ok()) return name_ok;
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

}  // namespace

std::string Reference::ApiHost() const {
  return registry == kDockerHub ? std::string(kDockerHubApiHost) : registry;
}

std::string Reference::Canonical() const {
  std::string canonical = absl::StrCat(registry, "/", repository);
  if (!tag.empty()) absl::StrAppend(&canonical, ":", tag);
  if (!digest.empty()) absl::StrAppend(&canonical, "@", digest);
  return canonical;
}

std::string Reference::Familiar() const {
  if (registry != kDockerHub || !absl::StartsWith(repository, kLibraryPrefix) ||
      absl::StrContains(absl::string_view(repository).substr(kLibraryPrefix.size()), '/')) {
    return Canonical();
  }
  std::string familiar = repository.substr(kLibraryPrefix.size());
  if (!tag.empty()) absl::StrAppend(&familiar, ":", tag);
  if (!digest.empty()) absl::StrAppend(&familiar, "@", digest);
  return familiar;
}

absl::StatusOr<Reference> ParseReference(absl::string_view text) {
  absl::StatusOr<Reference> ref = Parse(text);
  if (!ref.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid reference '", text, "': ", ref.status().message()));
  }
  return ref;
}

bool IsLoopbackRegistry(absl::string_view registry) {
  absl::string_view host = registry;
  if (absl::ConsumePrefix(&host, "[")) {
    host = host.substr(0, host.find(']'));
    return host == "::1";
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  in_addr address{};
  return inet_pton(AF_INET, std::string(host).c_str(), &address) == 1 &&
         (ntohl(address.s_addr) >> 24) == 127;
}

TlsVerify TlsVerifyFor(absl::string_view registry, const std::vector<std::string>& insecure) {
  for (const std::string& named : insecure) {
    if (registry == named) return TlsVerify::kFalse;
    // "HOST" covers "HOST:PORT"; "[::1]" covers "[::1]:PORT".
    if (named.find(':') == std::string::npos || (named.front() == '[' && named.back() == ']')) {
      if (absl::StartsWith(registry, named) && registry.size() > named.size() &&
          registry[named.size()] == ':') {
        return TlsVerify::kFalse;
      }
    }
  }
  return TlsVerify::kDefault;
}

}  // namespace zygo::images
