// A startup snapshot of worker.js (`node --build-snapshot`), built once by the zygote and
// started by every worker (`node --snapshot-blob`): the worker's code and the modules most
// handlers use come deserialised instead of compiled. It pays where Node ships no snapshot
// of its own (Debian's nodejs: ~30% of a worker's start) and costs where it does (a user
// snapshot replaces Node's own and its code cache), so the agent builds one only there
// (main.cc), and only for CommonJS handlers and pools: a worker started from a snapshot
// cannot import() an ES module.
#ifndef ZYGO_AGENTS_NODE_NODE_SNAPSHOT_H_
#define ZYGO_AGENTS_NODE_NODE_SNAPSHOT_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::node {

// worker.js's source in a sealed memfd: what workers start from where there is no
// snapshot (`node --preserve-symlinks-main /proc/self/fd/4`).
absl::StatusOr<base::UniqueFd> WorkerSource();

// Builds the snapshot with `node` into a sealed memfd (no write, grow or shrink: a request
// that reaches it through its worker's fd 4 cannot change what later workers start from).
// worker.js goes through a file of its own in `tmp_dir` (the builder takes only a path),
// removed afterwards. Errors name what failed, with the builder's last output.
absl::StatusOr<base::UniqueFd> BuildWorkerSnapshot(const std::string& node,
                                                   const std::string& tmp_dir);

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_NODE_SNAPSHOT_H_
