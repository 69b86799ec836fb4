// The warm-exec spare's start-up, isolation, wait for Run and exec.
#include "agents/exec/exec_spare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"

namespace zygo::agents::exec {
namespace {

// Exit statuses of a spare that never ran its command, beside zygote::SpareExit's.
enum ExecExit : int {
  kSetupFailed = 1,
  kCannotExecute = 126,
  kNotFound = 127,
};

[[noreturn]] void ReportFailed(int channel, uint64_t request_id, const std::string& type,
                               const std::string& message, int exit_code) {
  const wire::FailedMessage failed{request_id, type,
                                   wire::Head(message, wire::kMaxFailedMessageSize), ""};
  absl::StatusOr<wire::Frame> frame = wire::Encode(failed);
  if (frame.ok()) (void)wire::SendFrame(channel, *frame, {});
  ::_exit(exit_code);
}

}  // namespace

absl::Status ExecSpareRunner::Isolate() {
  // Before the request: the command inherits TMPDIR through execvp's environ.
  return isolation::IsolateSpareForChildren(landlock_);
}

void ExecSpareRunner::RunSpare(const zygote::SpareContext& context) {
  // Right away rather than last: a zygote dying while this spare prepares takes it along.
  if (!isolation::DieWithParent(context.zygote_pid).ok()) ::_exit(zygote::kSpareZygoteGone);
  // Before Forked: the supervisor mounts this spare's /tmp in the namespaces it names then.
  const absl::Status setup = isolation::EnterOwnNamespaces();
  absl::StatusOr<base::UniqueFd> channel = zygote::AnnounceSpare(context);
  if (!channel.ok()) ::_exit(zygote::kSpareNotAnnounced);
  // Isolation at the supervisor's Isolate, before any Run; the command runs only after it.
  const int fd = channel->get();
  zygote::ChildChannelHandlers handlers;
  handlers.on_run = [this, fd](wire::ReceivedFrame& received, const wire::RunMessage& run) {
    Exec(fd, received, run.request_id, run.fd_layout == wire::FdLayout::kStdio);
  };
  handlers.on_isolate = [this] { return Isolate(); };
  zygote::ServeChildChannel(fd, setup, handlers);
}

void ExecSpareRunner::Exec(int channel, const wire::ReceivedFrame& received, uint64_t request_id,
                           bool stdio) {
  if (stdio) {
    // dup2 clears CLOEXEC on 0-2; the Run's own copies close at exec, as do an event
    // memfd (v6; a command's input is its stdin) and the channel (which tells the
    // supervisor the command is running).
    for (int target = 0; target < 3; ++target) {
      if (::dup2(received.fds[target].get(), target) < 0) {
        ReportFailed(channel, request_id, "SetupError",
                     absl::StrCat("dup2(request fd, ", target, "): ", ::strerror(errno)),
                     kSetupFailed);
      }
    }
  }
  ::execvp(command_[0], command_);
  const int exec_errno = errno;
  ReportFailed(channel, request_id, "ExecError",
               absl::StrCat(command_[0], ": ", ::strerror(exec_errno)),
               exec_errno == ENOENT ? kNotFound : kCannotExecute);
}

}  // namespace zygo::agents::exec
