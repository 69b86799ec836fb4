// The egress allowlist: which host names a sandbox may resolve, and on which ports it may
// then connect to the addresses they resolve to. Pure logic: no sockets, no privileges.
#ifndef ZYGO_NET_ALLOWLIST_H_
#define ZYGO_NET_ALLOWLIST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zygo::net {

// One "host:port" entry, normalized: lowercase, no trailing dot.
struct AllowEntry {
  // "api.example.com", or "*.cdn.example.com" for every name strictly below cdn.example.com.
  std::string pattern;
  uint16_t port = 0;

  bool is_wildcard() const { return pattern.size() > 2 && pattern[0] == '*'; }
  std::string ToString() const;  // "api.example.com:443"
  bool operator==(const AllowEntry& other) const {
    return pattern == other.pattern && port == other.port;
  }
};

// Parses one entry, "NAME:PORT" or "*.NAME:PORT":
// - NAME is a DNS host name: labels of 1-63 letters, digits, '-' or '_' (no leading or
//   trailing '-'), at most 253 characters, case-insensitive, one trailing dot allowed.
//   Internationalized names must be given in their punycode (xn--) form; they are matched
//   as given, never converted.
// - A wildcard is "*." followed by at least two labels; "*" elsewhere is refused
//   ("api.*.com", "*api.example.com", "*.com"). Public suffixes are not known here, so
//   "*.co.uk" is accepted; the spec author owns that choice.
// - PORT is 1-65535, decimal.
// - IP literals ("192.0.2.1:443", "[2001:db8::1]:443") and names whose last label is all
//   digits are refused. Egress is by name only: the firewall admits an address only after
//   the resolver has answered it for an allowed name, so a raw-IP entry would bypass the
//   resolver's rebinding check and the TTL bound. Use --net full for raw addresses.
// Returns InvalidArgument naming the entry and the rule it breaks.
absl::StatusOr<AllowEntry> ParseAllowEntry(absl::string_view text);

// Normalizes a name a client asked about: lowercase, one trailing dot removed. nullopt when
// the name is not a valid host name by the rules above (empty labels, bad characters, too
// long), so such a name matches nothing. Pure; any thread.
std::optional<std::string> NormalizeHostName(absl::string_view name);

// An immutable set of entries.
class Allowlist {
 public:
  Allowlist() = default;  // allows nothing
  // Parses every entry; the first bad one fails the whole list, with its index.
  static absl::StatusOr<Allowlist> Parse(absl::Span<const std::string> entries);

  // The ports `name` may be reached on, ascending and without duplicates; empty when the
  // name is not allowed (the resolver answers NXDOMAIN and asks no upstream).
  // Matching: case-insensitive; a trailing dot is ignored; an exact pattern matches only
  // itself; "*.x.y" matches "a.x.y" and "a.b.x.y" but not "x.y"; labels match whole, so
  // "evilexample.com" never matches "example.com" or "*.example.com". Pure; any thread.
  std::vector<uint16_t> PortsFor(absl::string_view name) const;
  bool Allows(absl::string_view name) const { return !PortsFor(name).empty(); }

  const std::vector<AllowEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  explicit Allowlist(std::vector<AllowEntry> entries) : entries_(std::move(entries)) {}

  std::vector<AllowEntry> entries_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_ALLOWLIST_H_
