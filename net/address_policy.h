// The addresses a namespaced sandbox may never reach, in any network mode: private, special
// and local ranges, and every IPv6 form that embeds one of them. One table serves both the
// resolver's rebinding check and the firewall's drop rules, so they cannot disagree.
#ifndef ZYGO_NET_ADDRESS_POLICY_H_
#define ZYGO_NET_ADDRESS_POLICY_H_

#include <netinet/in.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "net/ip_address.h"

namespace zygo::net {

// One refused prefix and why it is refused.
struct RefusedRange {
  IpPrefix prefix;
  std::string reason;  // "private (RFC 1918)"

  // For messages: "10.0.0.0/8, private (RFC 1918)".
  std::string ToString() const;
};

// Every refused prefix, IPv4 then IPv6. Where prefixes overlap, the more specific one comes
// first, so the first match gives the most useful reason.
//
// IPv4: 0/8, 10/8, 100.64/10, 127/8, 169.254/16 (with the metadata address), 172.16/12,
// 192.168/16, 224/4, 255.255.255.255, 240/4.
// IPv6: ::, ::1, ::/96 (IPv4-compatible, whatever it embeds), ::ffff:0:0/96 (IPv4-mapped),
// 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) forms of every IPv4 range above,
// 64:ff9b:1::/48 (local-use NAT64), 2001::/32 (Teredo), fc00::/7, fe80::/10, fec0::/10,
// ff00::/8.
//
// Pure; any thread.
const std::vector<RefusedRange>& RefusedRanges();

// The first refused range containing `address`, or nullptr when the address is public.
// Pure; any thread.
const RefusedRange* FindRefusedRange(const IpAddress& address);

// Whether a sandbox must never reach `address`. Pure; any thread.
bool IsRefusedAddress(const in_addr& address);
bool IsRefusedAddress(const in6_addr& address);
bool IsRefusedAddress(const IpAddress& address);
// The same for numeric text; InvalidArgument when `address` is not a numeric IP address.
absl::StatusOr<bool> IsRefusedAddress(absl::string_view address);

// OK for a public address; PermissionDenied naming the range otherwise, e.g.
// "10.1.2.3 is in 10.0.0.0/8, private (RFC 1918): a sandbox may not reach it".
absl::Status CheckPublicAddress(const IpAddress& address);

}  // namespace zygo::net

#endif  // ZYGO_NET_ADDRESS_POLICY_H_
