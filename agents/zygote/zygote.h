// The zygote loop every agent runs: waits on the zygote channel and SIGCHLD; forks a spare
// per Spawn, and reports each reaped spare as Done(spare id, exit status) after removing
// its temp dir (agents/isolation). What a spare does is the agent's SpareRunner.
#ifndef ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
#define ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"

namespace zygo::agents::zygote {

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

// Blocks SIGCHLD in the calling thread, for the zygote's signalfd. Call first thing in
// main, before any runtime starts threads, so every thread inherits the mask.
absl::Status BlockChildSignal();

// Serves the zygote channel until the supervisor hangs up (then kills and reaps the spares
// still alive, removes their temp dirs and returns OK). A malformed frame is answered with
// Error and the loop goes on; only losing the channel or the signalfd ends it with an error.
absl::Status RunZygote(int channel_fd, SpareRunner& runner);

}  // namespace zygo::agents::zygote

#endif  // ZYGO_AGENTS_ZYGOTE_ZYGOTE_H_
