// Parsing and matching of egress allowlist entries.
#include "net/allowlist.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "net/ip_address.h"

namespace zygo::net {
namespace {

constexpr size_t kMaxNameLength = 253;  // RFC 1035 2.3.4, in text form without the root dot
constexpr size_t kMaxLabelLength = 63;

bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// `name` is lowercase without a trailing dot. Returns why it is not a host name, or OK.
absl::Status CheckHostName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("the name is empty");
  if (name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("the name is longer than ", kMaxNameLength, " characters"));
  }
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty()) return absl::InvalidArgumentError("the name has an empty label");
    if (label.size() > kMaxLabelLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("label \"", label, "\" is longer than ", kMaxLabelLength, " characters"));
    }
    for (char c : label) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        return absl::InvalidArgumentError(
            "the name is not ASCII; give an internationalized name in its punycode (xn--) "
            "form");
      }
      if (!IsLabelChar(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("label \"", label, "\" has a character other than a-z, 0-9, '-', '_'"));
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("label \"", label, "\" starts or ends with '-'"));
    }
  }
  return absl::OkStatus();
}

// Lowercase, one trailing dot removed (the root label of a fully qualified name).
std::string Lower(absl::string_view name) {
  if (absl::EndsWith(name, ".")) name.remove_suffix(1);
  return absl::AsciiStrToLower(name);
}

absl::Status RefuseIpLiteral() {
  return absl::InvalidArgumentError(
      "IP addresses are refused: egress allows names only, and an address becomes reachable "
      "when the resolver answers it for an allowed name (use --net full for raw addresses)");
}

absl::StatusOr<uint16_t> ParsePort(absl::string_view text) {
  uint32_t port = 0;
  if (text.empty() || text.size() > 5 ||
      text.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("port \"", text, "\" is not a number from 1 to 65535"));
  }
  return static_cast<uint16_t>(port);
}

// `host` is lowercase without a trailing dot; checks it as a pattern.
absl::Status CheckPattern(absl::string_view host) {
  if (IpAddress::Parse(host).ok()) return RefuseIpLiteral();
  absl::string_view name = host;
  if (absl::StartsWith(host, "*.")) {
    name = host.substr(2);
    if (name.find('.') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          "a wildcard needs at least two labels after \"*.\" (\"*.example.com\", not \"*.com\")");
    }
  }
  if (name.find('*') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "'*' is allowed only as the whole first label (\"*.example.com\")");
  }
  ZYGO_RETURN_IF_ERROR(CheckHostName(name));
  // inet_aton reads "127.1" and "1.2.3.4." as addresses, and no TLD is all digits.
  absl::string_view last = name.substr(name.rfind('.') + 1);
  if (last.find_first_not_of("0123456789") == absl::string_view::npos) return RefuseIpLiteral();
  return absl::OkStatus();
}

absl::StatusOr<AllowEntry> ParseEntry(absl::string_view text) {
  if (absl::StartsWith(text, "[")) return RefuseIpLiteral();
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError("needs a port (\"api.example.com:443\")");
  }
  absl::string_view host = text.substr(0, colon);
  if (host.find(':') != absl::string_view::npos) return RefuseIpLiteral();  // bare IPv6
  ZYGO_ASSIGN_OR_RETURN(const uint16_t port, ParsePort(text.substr(colon + 1)));
  std::string pattern = Lower(host);
  ZYGO_RETURN_IF_ERROR(CheckPattern(pattern));
  return AllowEntry{std::move(pattern), port};
}

}  // namespace

std::string AllowEntry::ToString() const { return absl::StrCat(pattern, ":", port); }

absl::StatusOr<AllowEntry> ParseAllowEntry(absl::string_view text) {
  absl::StatusOr<AllowEntry> entry = ParseEntry(text);
  if (!entry.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("allow entry \"", text, "\": ", entry.status().message()));
  }
  return entry;
}

std::optional<std::string> NormalizeHostName(absl::string_view name) {
  std::string lowered = Lower(name);
  if (!CheckHostName(lowered).ok()) return std::nullopt;
  return lowered;
}

absl::StatusOr<Allowlist> Allowlist::Parse(absl::Span<const std::string> entries) {
  std::vector<AllowEntry> parsed;
  parsed.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    absl::StatusOr<AllowEntry> entry = ParseAllowEntry(entries[i]);
    if (!entry.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("allow[", i, "]: ", entry.status().message()));
    }
    parsed.push_back(*std::move(entry));
  }
  return Allowlist(std::move(parsed));
}

std::vector<uint16_t> Allowlist::PortsFor(absl::string_view name) const {
  std::vector<uint16_t> ports;
  const std::optional<std::string> normalized = NormalizeHostName(name);
  if (!normalized.has_value()) return ports;
  for (const AllowEntry& entry : entries_) {
    bool match = false;
    if (entry.is_wildcard()) {
      // ".x.y": a valid name ending in it has at least one whole label before it.
      absl::string_view suffix = absl::string_view(entry.pattern).substr(1);
      match = normalized->size() > suffix.size() && absl::EndsWith(*normalized, suffix);
    } else {
      match = *normalized == entry.pattern;
    }
    if (match) ports.push_back(entry.port);
  }
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

}  // namespace zygo::net
