// The zygote's event loop over the zygote channel and a SIGCHLD signalfd.
#include "agents/zygote/zygote.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/join.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::zygote {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

sigset_t ChildSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  return set;
}

wire::DoneMessage ReapedDone(uint64_t spare_id, int wstatus) {
  wire::DoneMessage done{spare_id, wire::ExitKind::kExited, 0, ""};
  if (WIFSIGNALED(wstatus)) {
    done.exit_kind = wire::ExitKind::kSignalled;
    done.exit_code = WTERMSIG(wstatus);
  } else {
    done.exit_code = WEXITSTATUS(wstatus);
  }
  return done;
}

// Sends `frame` on `channel`; false when it could not be made or sent.
bool SendOn(int channel, const absl::StatusOr<wire::Frame>& frame) {
  return frame.ok() && wire::SendFrame(channel, *frame, {}).ok();
}

// A Run is refused, the spare ended, when its isolation failed.
[[noreturn]] void RefuseUnisolatedRun(int channel, uint64_t request_id, const absl::Status& setup) {
  (void)SendOn(channel, wire::Encode(wire::FailedMessage{
                            request_id, "SetupError",
                            wire::Head(setup.ToString(), wire::kMaxFailedMessageSize), ""}));
  ::_exit(kSpareNotIsolated);
}

// Where a spare's isolation stands: `isolated` is what a Run is refused with until it is OK.
struct IsolationState {
  bool asked = false;
  absl::Status isolated = absl::FailedPreconditionError("the supervisor sent Run before Isolate");
};

// One frame on a spare's child channel: OK once served, else the error to answer it with.
absl::Status ServeChildFrame(int channel, const absl::Status& setup, IsolationState& isolation,
                             wire::ReceivedFrame& received, const ChildChannelHandlers& handlers) {
  const wire::MessageType type = received.frame.type;
  switch (type) {
    case wire::MessageType::kRun: {
      absl::StatusOr<wire::RunMessage> run = wire::DecodeRun(received);
      if (!run.ok()) return run.status();
      if (!isolation.isolated.ok()) {
        RefuseUnisolatedRun(channel, run->request_id, isolation.isolated);
      }
      handlers.on_run(received, *run);
      std::abort();  // on_run never returns: a spare serves one request at most.
    }
    case wire::MessageType::kIsolate: {
      absl::StatusOr<wire::IsolateMessage> isolate = wire::DecodeIsolate(received);
      if (!isolate.ok()) return isolate.status();
      if (isolation.asked) {
        isolation.isolated = absl::FailedPreconditionError("the supervisor sent Isolate twice");
        return isolation.isolated;
      }
      isolation.asked = true;
      isolation.isolated = setup.ok() ? handlers.on_isolate() : setup;
      return absl::OkStatus();
    }
    case wire::MessageType::kJoin:
      // A failed join is answered with Error; the supervisor then moves this process.
      if (absl::Status joined = wire::AnswerJoin(channel, received);
          !joined.ok() && handlers.on_join_failed) {
        handlers.on_join_failed(joined);
      }
      return absl::OkStatus();
    case wire::MessageType::kPing:
      (void)SendOn(channel, wire::Encode(wire::PongMessage{received.frame.request_id}));
      return absl::OkStatus();
    default:
      if (handlers.on_other && handlers.on_other(received)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("a child channel does not take ", wire::MessageTypeName(type)));
  }
}

class Zygote {
 public:
  Zygote(int channel, UniqueFd signals, SpareRunner& runner)
      : channel_(channel), signals_(std::move(signals)), runner_(runner) {}

  absl::Status Run() {
    for (;;) {
      pollfd fds[2] = {{channel_, POLLIN, 0}, {signals_.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "poll(zygote channel, signalfd)");
      }
      if (fds[1].revents != 0) {
        if (absl::Status status = Reap(); !status.ok()) return status;
      }
      if (fds[0].revents != 0) {
        absl::StatusOr<wire::ReceivedFrame> received =
            wire::ReceiveFrame(channel_, absl::ZeroDuration());
        if (wire::IsPeerClosed(received.status())) return Shutdown();
        if (received.status().code() == absl::StatusCode::kDeadlineExceeded) continue;
        absl::Status status = received.ok() ? Handle(*received) : received.status();
        if (!status.ok() && !Reply(wire::ErrorFromStatus(0, status))) {
          return Shutdown();
        }
      }
    }
  }

 private:
  // Sends a zygote-channel message; false when the supervisor is gone.
  template <typename Message>
  bool Reply(const Message& message) {
    return SendOn(channel_, wire::Encode(message));
  }

  absl::Status Handle(const wire::ReceivedFrame& received) {
    switch (received.frame.type) {
      case wire::MessageType::kSpawn: {
        absl::StatusOr<wire::SpawnMessage> spawn = wire::DecodeSpawn(received);
        if (!spawn.ok()) return spawn.status();
        Spawn(spawn->spare_id);
        return absl::OkStatus();
      }
      case wire::MessageType::kPing:
        Reply(wire::PongMessage{received.frame.request_id});
        return absl::OkStatus();
      case wire::MessageType::kError:
        return absl::OkStatus();  // The supervisor's complaint; nothing to answer.
      default:
        return absl::InvalidArgumentError(absl::StrCat("the zygote channel does not take ",
                                                       wire::MessageTypeName(received.frame.type)));
    }
  }

  void Spawn(uint64_t spare_id) {
    for (const auto& [pid, id] : spares_) {
      if (id == spare_id) {
        Reply(wire::ErrorMessage{spare_id, absl::StatusCode::kAlreadyExists,
                                 absl::StrCat("spare ", spare_id, " is alive")});
        return;
      }
    }
    runner_.BeforeFork();
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The child: SIGCHLD back to normal for the handler's own subprocesses.
      const sigset_t set = ChildSignalSet();
      ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
      signals_.Reset();
      runner_.RunSpare(SpareContext{spare_id, channel_, ::getppid()});
    }
    const int fork_errno = errno;
    runner_.AfterForkInParent();
    if (pid < 0) {
      const absl::Status status =
          ErrnoStatus(fork_errno, absl::StrCat("fork(spare ", spare_id, ")"));
      Reply(wire::ErrorFromStatus(spare_id, status));
      return;
    }
    spares_[pid] = spare_id;
  }

  // Drains the signalfd, then reaps every exited child; its /tmp went with its mount
  // namespace, so by the time the supervisor reads Done(spare) nothing of it is left.
  absl::Status Reap() {
    signalfd_siginfo info;
    while (::read(signals_.get(), &info, sizeof(info)) == sizeof(info)) {
    }
    for (;;) {
      int wstatus = 0;
      const pid_t pid = ::waitpid(-1, &wstatus, WNOHANG);
      if (pid <= 0) return absl::OkStatus();  // 0: none left exited; ECHILD: no children.
      auto spare = spares_.find(pid);
      if (spare == spares_.end()) continue;  // An orphan we inherited as pid 1.
      const uint64_t spare_id = spare->second;
      spares_.erase(spare);
      if (!Reply(ReapedDone(spare_id, wstatus))) return absl::OkStatus();  // EOF comes next.
    }
  }

  // The supervisor hung up: the spares would die with the sandbox anyway; end them now.
  absl::Status Shutdown() {
    for (const auto& [pid, id] : spares_) ::kill(pid, SIGKILL);
    for (const auto& [pid, id] : spares_) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    spares_.clear();
    return absl::OkStatus();
  }

  const int channel_;
  UniqueFd signals_;
  SpareRunner& runner_;
  std::map<pid_t, uint64_t> spares_;  // Live spares by pid.
};

}  // namespace

absl::StatusOr<UniqueFd> AnnounceSpare(const SpareContext& context) {
  auto channel = wire::MakeAgentSocketPair();
  if (!channel.ok()) return channel.status();
  const int handed = channel->second.get();
  absl::StatusOr<wire::Frame> forked =
      wire::Encode(wire::ForkedMessage{context.spare_id, ::getpid()});
  if (!forked.ok()) return forked.status();
  if (absl::Status sent = wire::SendFrame(context.zygote_channel, *forked, {&handed, 1});
      !sent.ok()) {
    return sent;
  }
  ::close(context.zygote_channel);
  channel->second.Reset();
  return std::move(channel->first);
}

void ServeChildChannel(int channel, const absl::Status& setup,
                       const ChildChannelHandlers& handlers) {
  IsolationState isolation;
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(channel, absl::InfiniteDuration());
    if (wire::IsPeerClosed(received.status())) ::_exit(0);  // Retired unused.
    const absl::Status status =
        received.ok() ? ServeChildFrame(channel, setup, isolation, *received, handlers)
                      : received.status();
    if (status.ok()) continue;
    const uint64_t id = received.ok() ? received->frame.request_id : 0;
    if (!SendOn(channel, wire::Encode(wire::ErrorFromStatus(id, status)))) {
      ::_exit(kSpareChannelBroken);
    }
  }
}

absl::Status SendHello(int fd, absl::string_view kind) {
  absl::StatusOr<wire::Frame> hello =
      wire::Encode(wire::HelloMessage{std::string(kind), wire::kProtocolVersion, ::getpid()});
  if (!hello.ok()) return hello.status();
  absl::Status sent = wire::SendFrame(fd, *hello, {});
  if (sent.ok() || wire::IsPeerClosed(sent)) return sent;
  return absl::Status(sent.code(), absl::StrCat("Hello on fd ", fd, ": ", sent.message()));
}

absl::Status BlockChildSignal() {
  const sigset_t set = ChildSignalSet();
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
    return ErrnoStatus(errno, "sigprocmask(SIGCHLD)");
  return absl::OkStatus();
}

absl::Status RunZygote(int channel_fd, SpareRunner& runner) {
  const sigset_t set = ChildSignalSet();
  UniqueFd signals(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals.valid()) return ErrnoStatus(errno, "signalfd(SIGCHLD)");
  Zygote zygote(channel_fd, std::move(signals), runner);
  return zygote.Run();
}

}  // namespace zygo::agents::zygote
