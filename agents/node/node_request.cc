// The request path inside a Node spare: event, worker, relayed output, answer, exit.
#include "agents/node/node_request.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"

namespace zygo::agents::node {
namespace {

[[noreturn]] void ReportFailed(int channel, uint64_t request_id, const WorkerError& error) {
  // A JavaScript stack names the innermost frame first: its head is what matters.
  const wire::FailedMessage failed{request_id, wire::Head(error.type, wire::kMaxErrorTypeSize),
                                   wire::Head(error.message, wire::kMaxFailedMessageSize),
                                   wire::Head(error.stack, wire::kMaxTracebackSize)};
  absl::StatusOr<wire::Frame> frame = wire::Encode(failed);
  if (frame.ok()) (void)wire::SendFrame(channel, *frame, {});
  ::_exit(1);
}

[[noreturn]] void ReportDone(int channel, uint64_t request_id, std::string json) {
  absl::StatusOr<wire::Frame> frame =
      wire::Encode(wire::DoneMessage{request_id, wire::ExitKind::kExited, 0, std::move(json)});
  if (!frame.ok()) {
    ReportFailed(channel, request_id, {"ResultError", std::string(frame.status().message()), ""});
  }
  if (!wire::SendFrame(channel, *frame, {}).ok()) ::_exit(2);
  ::_exit(0);
}

// The worker ended without an answer: the spare ends the same way, so a worker the kernel
// or the deadline killed is a killed request, and one that called process.exit(N) exits N.
// Exit 0 is a promise that never settled (Node leaves when nothing is left to wait for),
// which is an error of the handler's, not a result.
[[noreturn]] void EndLikeTheWorker(int channel, uint64_t request_id, WorkerExit exit) {
  if (exit.signalled) {
    ::signal(exit.code, SIG_DFL);
    ::kill(::getpid(), exit.code);
    ::_exit(128 + exit.code);  // a signal that does not end a process by default
  }
  if (exit.code == 0) {
    ReportFailed(channel, request_id,
                 {"UnsettledError",
                  "the handler's promise never settled: Node had nothing left to wait for", ""});
  }
  ::_exit(exit.code);
}

}  // namespace

void RunNodeRequest(const WorkerCommand& command, std::optional<Worker>& worker, int channel,
                    wire::ReceivedFrame& received, const wire::RunMessage& run) {
  const uint64_t id = run.request_id;
  if (run.fd_layout == wire::FdLayout::kResultPipe) {
    // A protocol mismatch rather than a failed request: the result travels in Done.
    const wire::ErrorMessage error{id, absl::StatusCode::kUnimplemented,
                                   "the node agent takes fd layouts none and stdio"};
    (void)wire::SendFrame(channel, *wire::Encode(error), {});
    ::_exit(1);
  }
  std::string event = run.event;
  if (run.event_fd_size != 0) {
    base::UniqueFd& fd = received.fds[wire::FdCount(run.fd_layout)];
    absl::StatusOr<std::string> read = wire::ReadEventMemfd(fd.get(), run.event_fd_size);
    fd.Reset();
    if (!read.ok())
      ReportFailed(channel, id, {"EventError", std::string(read.status().message()), ""});
    event = *std::move(read);
  }
  if (!worker.has_value()) {
    absl::StatusOr<Worker> started = Worker::Start(command);
    if (!started.ok()) ReportFailed(channel, id, {"SetupError", started.status().ToString(), ""});
    worker = *std::move(started);
  }
  // Without the request's stdio, the worker's output goes where the spare's own does.
  const bool stdio = run.fd_layout == wire::FdLayout::kStdio;
  const int out = stdio ? received.fds[1].get() : STDOUT_FILENO;
  const int err = stdio ? received.fds[2].get() : STDERR_FILENO;
  absl::StatusOr<std::optional<WorkerError>> ready = worker->AwaitReady(STDERR_FILENO);
  if (!ready.ok()) {
    if (absl::IsUnavailable(ready.status())) EndLikeTheWorker(channel, id, worker->ReapExit());
    ReportFailed(channel, id, {"SetupError", ready.status().ToString(), ""});
  }
  if (ready->has_value()) ReportFailed(channel, id, **ready);
  if (absl::Status sent = worker->SendRequest(run.entry, run.code, event); !sent.ok()) {
    ReportFailed(channel, id, {"SetupError", sent.ToString(), ""});
  }
  std::string().swap(event);
  absl::StatusOr<WorkerAnswer> answer = worker->AwaitAnswer(out, err);
  if (!answer.ok()) {
    if (absl::IsUnavailable(answer.status())) EndLikeTheWorker(channel, id, worker->ReapExit());
    ReportFailed(channel, id, {"ProtocolError", answer.status().ToString(), ""});
  }
  if (answer->result.has_value()) ReportDone(channel, id, *std::move(answer->result));
  ReportFailed(channel, id, answer->error);
}

}  // namespace zygo::agents::node
