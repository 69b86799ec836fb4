// The two runtime pools `zygo mcp` runs code in: the specs it writes for them (a Python
// and a Node pool, with the operator's limits and network), and keeping them registered
// with the supervisor. Pools the operator names with --python-pool/--node-pool are used
// as they are and never registered.
#ifndef ZYGO_CLI_MCP_POOLS_H_
#define ZYGO_CLI_MCP_POOLS_H_

#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace zygo::cli::mcp {

enum class Language { kPython, kJavaScript };

struct PoolOptions {
  std::string prefix = "mcp";  // the pools are PREFIX-python and PREFIX-node
  std::string python_pool;     // an existing pool to use instead ("" = zygo mcp's own)
  std::string node_pool;
  std::string memory = "256M";
  std::string timeout = "30s";
  int pids = 64;
  std::string net_mode = "none";
  std::vector<std::string> allow;  // net.allow, for net_mode "egress"
  std::string code_dir;            // mounted read-only at /code in the pools
};

// One pool as zygo mcp uses it. `toml` and `origin` are empty for a pool it does not own.
struct PoolSpec {
  std::string name;
  bool owned = false;
  std::string toml;
  // The spec's name in the supervisor ("zygo-mcp-python-<hash>.toml"): its hash says
  // whether a registered pool of this name has this very spec.
  std::string origin;
};

// The spec of the pool for `language`. Pure.
PoolSpec MakePoolSpec(const PoolOptions& options, Language language);

// Where the pools' /code comes from unless --code-dir says: an empty directory of zygo's
// own (/var/lib/zygo/mcp/code for root, else $XDG_STATE_HOME/zygo/mcp/code or
// ~/.local/state/zygo/mcp/code), which the supervisor's code checks accept.
std::string DefaultCodeDir();

// Keeps the pools registered. Thread-safe.
class PoolKeeper {
 public:
  PoolKeeper(std::string socket_path, const PoolOptions& options);

  const std::string& Name(Language language) const;

  // Registers the pool unless the supervisor already has it with this spec (or the
  // operator named it). Asks the supervisor once; later calls return at once until
  // Forget. Errors are the supervisor's (its refusal of the spec, or Unavailable).
  absl::Status Ensure(Language language);
  // The supervisor has no such function (restarted elsewhere, `zygo down`): the next
  // Ensure asks again.
  void Forget(Language language);
  // Waits up to `limit` for the pool's first warm-up: OK once it warmed, else why not.
  absl::Status WaitWarm(Language language, absl::Duration limit);

 private:
  struct Pool {
    PoolSpec spec;
    bool ensured = false;
  };
  Pool& Of(Language language) { return language == Language::kPython ? python_ : node_; }

  const std::string socket_path_;
  const std::string code_dir_;
  std::mutex mu_;  // held across Ensure's calls, so two tool calls do not both register
  Pool python_;
  Pool node_;
};

}  // namespace zygo::cli::mcp

#endif  // ZYGO_CLI_MCP_POOLS_H_
