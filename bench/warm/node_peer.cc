// Running the Node peers: a node per request, or one node serving every request.
#include "bench/warm/node_peer.h"

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/warm/node_peer_sources.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "core/base/sys/wait_status.h"

extern char** environ;

namespace zygo::bench {
namespace {

constexpr int kSpawnDeadlineMs = 10'000;

}  // namespace

PeerScript NodeVmPeerScript(const std::string& node) {
  return {"the vm peer", node, "node_vm_peer.js", kNodeVmPeerSource};
}

std::string NodeVersion(const std::string& node) {
  absl::StatusOr<std::string> version = CaptureStdout({{node, "--version"}});
  return version.ok() ? std::string(absl::StripAsciiWhitespace(*version)) : "version unknown";
}

absl::StatusOr<NodeSpawnPeer> NodeSpawnPeer::Create(const std::string& node, const std::string& dir,
                                                    const std::string& handler_file,
                                                    const std::string& function) {
  if (access(node.c_str(), X_OK) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("the spawn peer's node: access(", node, ")"));
  }
  const std::string runner = dir + "/node_spawn_runner.js";
  ZYGO_RETURN_IF_ERROR(base::sys::WriteFileAtomically(runner, kNodeSpawnRunnerSource));
  Command command{{node, runner, handler_file, function}};
  command.workdir = dir;
  // The caller's environment less NODE_* (NODE_OPTIONS, NODE_EXTRA_CA_CERTS, ...): what
  // they add to a start is the caller's setting, not the peer's cost, and a function's
  // worker starts without them. NODE_EXTRA_CA_CERTS alone (every CA certificate parsed at
  // start) added ~60 ms of CPU to each start on the 2-vCPU host of docs/bench-warm.md.
  command.inherit_env = false;
  for (char** var = environ; *var != nullptr; ++var) {
    if (!absl::StartsWith(*var, "NODE_")) command.env.push_back(*var);
  }
  return NodeSpawnPeer(std::move(command));
}

absl::StatusOr<std::string> NodeSpawnPeer::Call(const std::string& event_json) {
  Command command = command_;
  command.argv.push_back(event_json);
  ZYGO_ASSIGN_OR_RETURN(CapturedRun run, RunCaptured(command, kSpawnDeadlineMs));
  cpu_seconds_ += run.cpu_seconds;
  if (!WIFEXITED(run.wait_status) || WEXITSTATUS(run.wait_status) != 0) {
    return absl::InternalError(
        absl::StrCat(CommandLine(command), ": ", base::sys::DescribeWaitStatus(run.wait_status)));
  }
  const size_t newline = run.out.find('\n');
  if (newline == std::string::npos) {
    return absl::InternalError(
        absl::StrCat(CommandLine(command), " printed no reply line: '", run.out, "'"));
  }
  run.out.resize(newline);
  return std::move(run.out);
}

}  // namespace zygo::bench
