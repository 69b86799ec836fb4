// The sandbox's nftables firewall, programmed over netlink (libnftnl + libmnl, never the nft
// binary) in whatever network namespace the given NETLINK_NETFILTER socket belongs to. Open
// that socket with OpenNetlinkInNetns (net/netns_socket.h).
//
// InstallFirewall(plan) replaces `table inet zygo` in one transaction. In egress mode:
//
//   table inet zygo {
//     set allowed4 { type ipv4_addr . inet_service; flags timeout; }
//     set allowed6 { type ipv6_addr . inet_service; flags timeout; }
//     chain refused {
//       ip daddr 0.0.0.0/8 drop   ... one rule per range of RefusedRanges()
//       ip6 daddr ff00::/8 drop       (net/address_policy.h), IPv4 then IPv6
//       ip daddr <host address> drop  ... one per plan.host_addresses() (pasta gateway)
//     }
//     chain output {
//       type filter hook output priority filter; policy drop;
//       oif "lo" accept                          # the sandbox's own loopback (ifindex 1)
//       ct state established,related accept
//       icmpv6 type 133-136 ip6 hoplimit 255 accept   # router/neighbor discovery
//       ip daddr <resolver> udp dport 53 accept  # ip6 daddr for an IPv6 resolver
//       ip daddr <resolver> tcp dport 53 accept
//       jump refused
//       meta l4proto tcp ip daddr . th dport @allowed4 accept
//       meta l4proto udp ip daddr . th dport @allowed4 accept
//       meta l4proto tcp ip6 daddr . th dport @allowed6 accept
//       meta l4proto udp ip6 daddr . th dport @allowed6 accept
//       counter drop                             # ICMP and everything else
//     }
//   }
//
// In full mode there are no sets, the output chain's policy is accept, and it ends at
// `jump refused` (the resolver rules only when the plan names a resolver). DescribeFirewall
// prints the exact text for a plan.
//
// Notes for callers:
// - Install before the sandboxed program runs: `ct state established` admits flows that
//   existed before the table did.
// - Established flows outlive their set element; a TTL bounds only new connections.
// - Anyone with CAP_NET_ADMIN over the namespace can delete the table; the sandboxed
//   program must not hold it.
#ifndef ZYGO_NET_FIREWALL_H_
#define ZYGO_NET_FIREWALL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "net/firewall_plan.h"
#include "net/ip_address.h"

namespace zygo::net {

// The longest TTL AddAllowed takes, a week; the resolver should clamp DNS TTLs to it.
inline constexpr uint32_t kMaxAllowedTtlSeconds = 7 * 24 * 3600;

// Installs the ruleset for `plan` (see above) in the network namespace of `netlink_fd` (a
// bound NETLINK_NETFILTER socket, borrowed), replacing any earlier `table inet zygo` in the
// same transaction, and returns once the kernel has committed it.
// Parent side (supervisor or launcher), never between fork and exec. Needs the socket's
// opener to have had CAP_NET_ADMIN over that namespace. Errors name the nftables object
// and errno; Unimplemented ("nftables is not available: ...") when the kernel lacks
// nf_tables, the inet family or an expression (ct, lookup) — the caller must then refuse to
// start the sandbox, never start it unfiltered. Not safe concurrently on one socket.
absl::Status InstallFirewall(int netlink_fd, const FirewallPlan& plan);

// Lets new TCP and UDP flows from the sandbox reach `address`:`port` for `ttl_seconds`
// (1 to kMaxAllowedTtlSeconds), by adding `address . port` to allowed4/allowed6 in its own
// small transaction. Returns after the kernel's ACK, so the element is live when it returns:
// the resolver calls it before it sends the answer. An IPv4-mapped address is added as
// IPv4 (that is what goes on the wire). If the element is already there with more time left,
// it is kept; with less, it is replaced atomically with the new TTL.
// PermissionDenied, without touching the kernel, for a refused address (FindRefusedRange);
// host addresses of the plan are not known here, but the `jump refused` before the set
// lookups drops them anyway. NotFound when the socket's namespace has no egress table.
// Parent side; same socket and capability rules as InstallFirewall.
absl::Status AddAllowed(int netlink_fd, const IpAddress& address, uint16_t port,
                        uint32_t ttl_seconds);

// The ruleset `plan` installs, in nft(8) syntax, for logs and documentation. Pure.
std::string DescribeFirewall(const FirewallPlan& plan);

}  // namespace zygo::net

#endif  // ZYGO_NET_FIREWALL_H_
