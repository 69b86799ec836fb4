// One request in a prepared Node spare: the event to its worker, the worker's stdout and
// stderr into the request's, its answer back as Done or Failed; then the spare exits, and
// the worker with it.
#ifndef ZYGO_AGENTS_NODE_NODE_REQUEST_H_
#define ZYGO_AGENTS_NODE_NODE_REQUEST_H_

#include <optional>

#include "agents/node/node_worker.h"
#include "agents/wire/frame.h"
#include "agents/wire/messages.h"

namespace zygo::agents::node {

// Runs `run` (whose fds `received` still owns) in `worker`, started now if the spare has
// none (a spare that could not join its cgroup by itself, or whose start failed), and
// exits. A worker that dies without answering ends this spare the same way (its signal
// or its exit status), so the supervisor sees a killed request as killed.
[[noreturn]] void RunNodeRequest(const WorkerCommand& command, std::optional<Worker>& worker,
                                 int channel, wire::ReceivedFrame& received,
                                 const wire::RunMessage& run);

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_NODE_REQUEST_H_
