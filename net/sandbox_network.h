// Runs in the zygo-net helper (net/zygo_net_main.cc), which links libuv, c-ares and
// libmnl so that `zygo` itself stays static.
//
// The network hookup of a sandbox in --net egress or --net full: from the parent, between
// clone and the child's "go", install the nftables firewall in the sandbox's network
// namespace, start pasta on it and Zygo's own resolver at 127.0.0.53:53 inside it (egress:
// allowlisted names only; full: any name). Everything it starts is stopped when the
// object goes away.
#ifndef ZYGO_NET_SANDBOX_NETWORK_H_
#define ZYGO_NET_SANDBOX_NETWORK_H_

#include <sys/types.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"
#include "net/dns_resolver.h"
#include "net/sandbox_network_plan.h"

namespace zygo::net {

// The running hookup of one sandbox. Parent side only.
class SandboxNetwork {
 public:
  // `pid` is the sandbox's first process, cloned into new user and network namespaces
  // whose id maps are written, and not yet let go. Order: firewall first (a sandbox is
  // never connected unfiltered), then pasta, then the resolver. On error, whatever was
  // started is stopped again.
  // `pasta_started`, if set, is told pasta's pid as soon as it runs (before the
  // resolver starts), so the caller can stop pasta whatever happens next.
  static absl::StatusOr<std::unique_ptr<SandboxNetwork>> StartFromParent(
      pid_t pid, const SandboxNetworkPlan& plan,
      const std::function<void(pid_t)>& pasta_started = nullptr);
  // zygo doctor: the firewall step of StartFromParent alone, in egress mode (the one with
  // sets and set lookups), then one public address admitted into its set as the resolver
  // would (AddAllowed); nothing is started, and the table goes with the namespace. `pid`
  // as for StartFromParent.
  static absl::Status CheckFirewallFromParent(pid_t pid);

  SandboxNetwork(const SandboxNetwork&) = delete;
  SandboxNetwork& operator=(const SandboxNetwork&) = delete;
  ~SandboxNetwork();

  // The daemonized pasta's pid (-1 before it started), so the process that started
  // zygo-net can stop pasta even if zygo-net itself is killed.
  pid_t pasta_pid() const { return pasta_pid_; }

  // Stops the resolver and pasta (SIGTERM, then SIGKILL after a second) and waits for
  // pasta to be gone. Idempotent.
  void Stop();

  // For tests and logs; null before the resolver started.
  const DnsResolver* resolver() const { return resolver_.get(); }

 private:
  SandboxNetwork() = default;
  absl::Status InstallFirewallStep(const SandboxNetworkPlan& plan);
  absl::Status StartPastaStep(pid_t pid, const SandboxNetworkPlan& plan);
  absl::Status StartResolverStep(const SandboxNetworkPlan& plan);

  base::UniqueFd netns_;    // /proc/<pid>/ns/net
  base::UniqueFd netlink_;  // NETLINK_NETFILTER in the sandbox's namespace
  base::UniqueFd pasta_;    // pidfd of the daemonized pasta
  pid_t pasta_pid_ = -1;
  std::unique_ptr<DnsResolver> resolver_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_SANDBOX_NETWORK_H_
