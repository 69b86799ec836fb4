// The two peers of `zygo bench warm --runtime node`, both unsandboxed and run with the
// host's node: a node spawned per request (bench/warm/node_spawn_runner.js, what a naive
// embedder does) and one long-lived node running each request in a new V8 context
// (bench/warm/node_vm_peer.js, n8n's Code-node runner). Parent side; no privileges.
#ifndef ZYGO_BENCH_WARM_NODE_PEER_H_
#define ZYGO_BENCH_WARM_NODE_PEER_H_

#include <string>

#include "absl/status/statusor.h"
#include "bench/common/timed_spawn.h"
#include "bench/warm/warm_peer.h"

namespace zygo::bench {

// bench/warm/node_vm_peer.js run with `node`, for PeerServer::Start.
PeerScript NodeVmPeerScript(const std::string& node);

// `node --version` ("v20.20.2"), or "version unknown".
std::string NodeVersion(const std::string& node);

class NodeSpawnPeer {
 public:
  // Writes node_spawn_runner.js into `dir`; each Call then runs
  // `node DIR/node_spawn_runner.js HANDLER_FILE FUNCTION EVENT_JSON` in `dir`, with this
  // process's environment less its NODE_* variables.
  static absl::StatusOr<NodeSpawnPeer> Create(const std::string& node, const std::string& dir,
                                              const std::string& handler_file,
                                              const std::string& function);

  // Spawns one node for `event_json` and waits for it to exit; its reply line (without
  // '\n'). An error when it failed, printed no line or ran past 10 s.
  absl::StatusOr<std::string> Call(const std::string& event_json);

  // The CPU (user + system) of every node spawned so far, from wait4(2).
  double cpu_seconds() const { return cpu_seconds_; }

 private:
  explicit NodeSpawnPeer(Command command) : command_(std::move(command)) {}
  Command command_;  // without the event
  double cpu_seconds_ = 0;
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_NODE_PEER_H_
