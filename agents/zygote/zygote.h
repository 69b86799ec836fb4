// The zygote loop every agent runs: waits on the zygote channel and SIGCHLD; forks a spare
// per Spawn, and reports each reaped spare as Done(spare id, exit status) after removing
// its temp dir (agents/isolation). What a spare does is the agent's SpareRunner.
#ifndef ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
#define ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::zygote {

// Exit statuses of a spare that could not even start; the zygote reports them in Done.
enum SpareExit : int {
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

// Blocks SIGCHLD in the calling thread, for the zygote's signalfd. Call first thing in
// main, before any runtime starts threads, so every thread inherits the mask.
absl::Status BlockChildSignal();

// Serves the zygote channel until the supervisor hangs up (then kills and reaps the spares
// still alive, removes their temp dirs and returns OK). A malformed frame is answered with
// Error and the loop goes on; only losing the channel or the signalfd ends it with an error.
absl::Status RunZygote(int channel_fd, SpareRunner& runner);

}  // namespace zygo::agents::zygote

#endif  // ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
