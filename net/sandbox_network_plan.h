// What the network of a --net egress or --net full sandbox will be, checked in the parent
// before any clone: the allowlist, the resolver's upstream servers, the pasta binary.
// Pure apart from reading resolv.conf, and free of libuv, c-ares and libmnl, so the
// static `zygo` binary can check a request and hand the plan to the zygo-net helper.
#ifndef ZYGO_NET_SANDBOX_NETWORK_PLAN_H_
#define ZYGO_NET_SANDBOX_NETWORK_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "net/ip_address.h"

namespace zygo::net {

enum class SandboxNetMode { kEgress, kFull };

// A DNS server the sandbox's resolver forwards names to (egress: allowed names only).
struct UpstreamServer {
  IpAddress address;
  uint16_t port = 53;
  std::string ToString() const;  // "192.0.2.1:53", "[2001:db8::1]:53"
};

// What the caller asked for, before any checking.
struct SandboxNetworkRequest {
  SandboxNetMode mode = SandboxNetMode::kEgress;
  std::vector<std::string> allow;  // "HOST:PORT" entries (egress only)
  std::string pasta_path = "/usr/bin/pasta";
  // Rootless pasta opens this itself, so an ordinary user needs it read-write.
  std::string tun_path = "/dev/net/tun";
  // Where the resolver's upstream servers come from (both modes): the host's resolv.conf's
  // nameserver lines, unless `dns_upstream` ("IP:PORT", "[IPv6]:PORT" or "IP") is set.
  std::string resolv_conf_path = "/etc/resolv.conf";
  std::string dns_upstream;
};

// Checked and immutable.
struct SandboxNetworkPlan {
  SandboxNetMode mode = SandboxNetMode::kEgress;
  std::vector<std::string> allow;  // normalized "host:port" entries, each parses
  std::vector<UpstreamServer> upstream;
  std::string pasta_path;
};

// Refuses, each with one line: a bad --allow entry, no upstream DNS server (either mode), a
// missing pasta (naming the passt package), a rootless caller who cannot open the tun
// device pasta needs.
absl::StatusOr<SandboxNetworkPlan> PlanSandboxNetwork(const SandboxNetworkRequest& request);

// The nameserver lines of a resolv.conf, port 53; InvalidArgument when there is none.
// The resolver asks them from the host's network namespace, so 127.0.0.53 works.
absl::StatusOr<std::vector<UpstreamServer>> ParseResolvConf(absl::string_view content);
// "192.0.2.1:5353", "[2001:db8::1]:53" or a bare address (port 53).
absl::StatusOr<UpstreamServer> ParseDnsServer(absl::string_view text);

// The plan as zygo-net's command line, and back.
std::vector<std::string> SandboxNetworkPlanToArgs(const SandboxNetworkPlan& plan);
absl::StatusOr<SandboxNetworkPlan> SandboxNetworkPlanFromArgs(const std::vector<std::string>& args);

}  // namespace zygo::net

#endif  // ZYGO_NET_SANDBOX_NETWORK_PLAN_H_
