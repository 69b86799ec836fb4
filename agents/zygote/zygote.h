// The zygote loop every agent runs: waits on the zygote channel and SIGCHLD; forks a spare
// per Spawn, and reports each reaped spare as Done(spare id, exit status). A spare's /tmp
// is its own tmpfs, gone with its mount namespace (agents/isolation). What a spare does is the
// agent's SpareRunner; the start and the child-channel loop every spare shares are here too.
#ifndef ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
#define ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/wire/frame.h"
#include "agents/wire/messages.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::zygote {

// Exit statuses of a spare that could not even start; the zygote reports them in Done.
enum SpareExit : int {
  kSpareNotIsolated = 1,    // its isolation failed or never came; its Run was answered
                            // Failed("SetupError")
  kSpareZygoteGone = 3,     // DieWithParent failed: the zygote is gone already
  kSpareNotAnnounced = 5,   // AnnounceSpare failed
  kSpareChannelBroken = 6,  // its child channel failed before a Run
};

// What a spare is told when it starts.
struct SpareContext {
  uint64_t spare_id = 0;
  int zygote_channel = -1;  // The child sends Forked on it, then closes it.
  pid_t zygote_pid = 0;
};

// The language-specific halves of a fork.
class SpareRunner {
 public:
  virtual ~SpareRunner() = default;
  // In the zygote, right before fork() (flush buffered output, the runtime's pre-fork hook).
  virtual void BeforeFork() = 0;
  // In the zygote, right after fork(), whether or not it succeeded.
  virtual void AfterForkInParent() = 0;
  // In the child, with SIGCHLD unblocked again and the zygote's own fds closed. Never
  // returns: it _exits.
  [[noreturn]] virtual void RunSpare(const SpareContext& context) = 0;
};

// A spare's first message, the same in every agent: makes its child channel and sends
// Forked(spare id, getpid()) with the other end on the zygote channel (the kernel's
// credentials on that frame, not its payload, tell the supervisor which process it is),
// then closes the zygote channel and the handed end: only the zygote talks on the one, only
// the supervisor holds the other. Returns the spare's end. Child side, after DieWithParent.
absl::StatusOr<base::UniqueFd> AnnounceSpare(const SpareContext& context);

// What an agent's spare does on its child channel; ServeChildChannel does the rest.
struct ChildChannelHandlers {
  // The Run of a spare whose isolation succeeded (`received` still owns the Run's fds):
  // runs the request and never returns (it execs or _exits). Required.
  std::function<void(wire::ReceivedFrame& received, const wire::RunMessage& run)> on_run;
  // The spare's isolation, run at the supervisor's Isolate (its own /tmp is mounted by
  // then): agents/isolation IsolateSpare and whatever the agent adds. Required.
  std::function<absl::Status()> on_isolate;
  // A frame of a type the loop does not take itself (Run, Join, Isolate, Ping): true when the agent
  // took it. Empty, or false: the frame is answered with Error.
  std::function<bool(const wire::ReceivedFrame& received)> on_other;
  // After a Join the spare could not do or answer (wire::AnswerJoin's failure, already
  // answered with Error when it could be): for the agent's log. May be empty.
  std::function<void(const absl::Status& failure)> on_join_failed;
};

// Serves a spare's child channel until a Run (then never returns) or EOF (exit 0: retired
// unused). Answers Join (wire::AnswerJoin) and Ping itself, runs handlers.on_isolate at
// the first Isolate (a second is an error), and answers a malformed frame, a bad Run or a
// type nobody takes with Error. A Run before Isolate, or while `setup` (what the spare did
// before it announced itself: its own namespaces) or the isolation is not OK, is answered
// Failed("SetupError") and the spare exits kSpareNotIsolated: a spare that is not apart
// from the others never runs a request. Otherwise handlers.on_run runs it. A channel the
// spare cannot answer on ends it (kSpareChannelBroken). Child side, after AnnounceSpare.
[[noreturn]] void ServeChildChannel(int channel, const absl::Status& setup,
                                    const ChildChannelHandlers& handlers);

// The agent's first frame on the zygote channel `fd`, once it is warm: Hello(kind, this
// pid). A supervisor that dropped the zygote before it was ready is wire::IsPeerClosed;
// other errors say "Hello on fd N: ...".
absl::Status SendHello(int fd, absl::string_view kind);

// Blocks SIGCHLD in the calling thread, for the zygote's signalfd. Call first thing in
// main, before any runtime starts threads, so every thread inherits the mask.
absl::Status BlockChildSignal();

// Serves the zygote channel until the supervisor hangs up (then kills and reaps the spares
// still alive and returns OK). A malformed frame is answered with
// Error and the loop goes on; only losing the channel or the signalfd ends it with an error.
absl::Status RunZygote(int channel_fd, SpareRunner& runner);

}  // namespace zygo::agents::zygote

#endif  // ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
