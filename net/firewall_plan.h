// What the sandbox's nftables firewall will say, decided in the parent before anything is
// installed: the mode, the resolver the sandbox may query, and the host's own addresses.
#ifndef ZYGO_NET_FIREWALL_PLAN_H_
#define ZYGO_NET_FIREWALL_PLAN_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "net/ip_address.h"

namespace zygo::net {

enum class FirewallMode {
  // Only loopback, the resolver on port 53, and address:port pairs the resolver has added
  // with AddAllowed (net/firewall.h). Everything else is dropped, ICMP included.
  kEgress,
  // Everything except the refused ranges (net/address_policy.h) and the host addresses.
  kFull,
};

// Immutable once made. Pure; any thread; no privileges.
class FirewallPlan {
 public:
  // `resolver`: the address the sandbox's resolv.conf names; UDP and TCP to its port 53 are
  // accepted before any refused range is checked, so it may be on the sandbox's loopback
  // (127.0.0.53) or be the pasta gateway. `host_addresses`: addresses that reach the host
  // itself, such as pasta's gateway (which pasta maps to the host's loopback); they are
  // dropped like the refused ranges. InvalidArgument for an address that is not unicast
  // (unspecified, multicast, broadcast).
  static absl::StatusOr<FirewallPlan> Egress(const IpAddress& resolver,
                                             std::vector<IpAddress> host_addresses);
  // `resolver` is optional here: when given, port 53 on it is reachable before any refused
  // range is checked. zygo-net names its own resolver (127.0.0.53, which the sandbox's
  // loopback reaches anyway); a forwarder on a host address would need it.
  static absl::StatusOr<FirewallPlan> Full(std::optional<IpAddress> resolver,
                                           std::vector<IpAddress> host_addresses);

  FirewallMode mode() const { return mode_; }
  const std::optional<IpAddress>& resolver() const { return resolver_; }
  // IPv4-mapped addresses are stored as IPv4; no duplicates.
  const std::vector<IpAddress>& host_addresses() const { return host_addresses_; }

 private:
  FirewallPlan(FirewallMode mode, std::optional<IpAddress> resolver,
               std::vector<IpAddress> host_addresses)
      : mode_(mode), resolver_(std::move(resolver)), host_addresses_(std::move(host_addresses)) {}

  FirewallMode mode_;
  std::optional<IpAddress> resolver_;
  std::vector<IpAddress> host_addresses_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_FIREWALL_PLAN_H_
