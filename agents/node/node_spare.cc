// The Node spare's start-up, isolation, worker start and wait for Run.
#include "agents/node/node_spare.h"

#include <unistd.h>

#include "agents/node/node_request.h"
#include "agents/wire/messages.h"

namespace zygo::agents::node {

absl::Status NodeSpareRunner::Isolate() {
  // Before the worker starts, which inherits TMPDIR.
  if (absl::Status isolated = isolation::IsolateSpareForChildren(landlock_); !isolated.ok()) {
    return isolated;
  }
  if (!join_failed_) {
    // A failure here is tried again at the Run, which reports it if it fails again.
    absl::StatusOr<Worker> started = Worker::Start(command_);
    if (started.ok()) {
      worker_ = *std::move(started);
      // Loaded before this spare reads another frame: a Run (or a Ping) it answers next
      // finds its worker ready. The answer, a load error too, is kept for the Run.
      (void)worker_->AwaitReady(STDERR_FILENO);
    }
  }
  return absl::OkStatus();
}

void NodeSpareRunner::RunSpare(const zygote::SpareContext& context) {
  // Right away rather than last: a zygote dying while this spare prepares takes it along.
  if (!isolation::DieWithParent(context.zygote_pid).ok()) ::_exit(zygote::kSpareZygoteGone);
  // Before Forked: the supervisor mounts this spare's /tmp in the namespaces it names then.
  const absl::Status setup = isolation::EnterOwnNamespaces();
  absl::StatusOr<base::UniqueFd> channel = zygote::AnnounceSpare(context);
  if (!channel.ok()) ::_exit(zygote::kSpareNotAnnounced);
  const int fd = channel->get();
  zygote::ChildChannelHandlers handlers;
  handlers.on_run = [this, fd](wire::ReceivedFrame& received, const wire::RunMessage& run) {
    RunNodeRequest(command_, worker_, fd, received, run);
  };
  handlers.on_isolate = [this] { return Isolate(); };
  handlers.on_join_failed = [this](const absl::Status&) { join_failed_ = true; };
  // Pages of a zygote's heap mean nothing to a fresh node process: taken, and ignored.
  handlers.on_other = [](const wire::ReceivedFrame& received) {
    return received.frame.type == wire::MessageType::kPrefault;
  };
  zygote::ServeChildChannel(fd, setup, handlers);
}

}  // namespace zygo::agents::node
