// Starts and stops zygo-net (net/zygo_net_main.cc), the helper process that holds the
// network of one --net egress/full sandbox. Parent side, in `zygo run`; links nothing
// beyond Abseil, so the static `zygo` binary can use it.
#ifndef ZYGO_NET_NETWORK_HELPER_H_
#define ZYGO_NET_NETWORK_HELPER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"
#include "net/sandbox_network_plan.h"

namespace zygo::net {

class NetworkHelper {
 public:
  // Runs `helper_path` for the sandbox `pid` (cloned, id maps written, not yet let go)
  // in a session of its own (a terminal's ^C must not skip its cleanup) and returns once
  // it said "ready": the firewall is installed, pasta and the resolver are running.
  // FailedPrecondition with the helper's one-line reason otherwise; the helper is gone
  // then.
  static absl::StatusOr<std::unique_ptr<NetworkHelper>> Start(const std::string& helper_path,
                                                              pid_t pid,
                                                              const SandboxNetworkPlan& plan);
  // zygo doctor: runs `helper_path --check-firewall PID`, which installs the egress
  // firewall in `pid`'s network namespace (the first step of Start, with nothing after
  // it) and admits one address into its set, then exits. `pid` is cloned into new user
  // and network namespaces whose id maps are written. FailedPrecondition with the
  // helper's one-line reason when nftables cannot do it.
  static absl::Status CheckFirewall(const std::string& helper_path, pid_t pid);

  NetworkHelper(const NetworkHelper&) = delete;
  NetworkHelper& operator=(const NetworkHelper&) = delete;
  ~NetworkHelper();

  // Closes the helper's stdin and waits for it to stop pasta and the resolver and exit.
  // Idempotent. If `zygo run` dies instead, the helper sees the same EOF.
  void Stop();

 private:
  NetworkHelper(pid_t pid, base::UniqueFd control, base::UniqueFd pasta)
      : pid_(pid), control_(std::move(control)), pasta_(std::move(pasta)) {}

  pid_t pid_;
  base::UniqueFd control_;  // the helper's stdin
  base::UniqueFd pasta_;    // pidfd of the pasta it started (to stop it if it could not)
};

}  // namespace zygo::net

#endif  // ZYGO_NET_NETWORK_HELPER_H_
