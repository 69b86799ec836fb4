// The supervisor's side of an agent, for the conformance suite: starts an agent binary as
// a plain subprocess on a zygote channel (supervisor end with SO_PASSCRED), and speaks the
// protocol to it: Hello, Spawn -> Forked, the spare's own /tmp and Isolate, Run on a child
// channel, Done(spare).
#ifndef ZYGO_AGENTS_CONFORMANCE_AGENT_PROCESS_H_
#define ZYGO_AGENTS_CONFORMANCE_AGENT_PROCESS_H_

#include <sys/types.h>

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "agents/wire/frame.h"
#include "agents/wire/messages.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::conformance {

// How long any single expected frame may take.
inline constexpr absl::Duration kFrameTimeout = absl::Seconds(20);

struct AgentCommand {
  std::string binary;
  std::vector<std::string> args;
  // Variables set for the agent on top of the test's environment, and ones removed.
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
};

// One spare, as the supervisor knows it after Forked.
struct Spare {
  uint64_t id = 0;
  pid_t pid = 0;            // sender_pid of the Forked frame: the kernel's word.
  int64_t claimed_pid = 0;  // The Forked payload's pid.
  size_t forked_fds = 0;
  base::UniqueFd channel;  // The supervisor's end of the child channel.
};

class AgentProcess {
 public:
  // Forks and execs the agent with the zygote channel as fd 3 and stderr into
  // `stderr_path`. Does not wait for Hello.
  static absl::StatusOr<std::unique_ptr<AgentProcess>> Start(const AgentCommand& command,
                                                             const std::string& stderr_path);
  ~AgentProcess();  // SIGKILLs and reaps the agent if it still runs.

  pid_t pid() const { return pid_; }

  // The next zygote-channel frame of `type` with `request_id`; frames that arrive first
  // and do not match are kept for later calls, in order.
  absl::StatusOr<wire::ReceivedFrame> Next(wire::MessageType type, uint64_t request_id,
                                           absl::Duration timeout = kFrameTimeout);
  absl::Status Send(const wire::Frame& frame);

  // Spawn(id), then the Forked frame for it; then, as the supervisor does, mounts the
  // spare's own /tmp (core::MountOwnTmp) and sends Isolate, unless `isolate` is false.
  absl::StatusOr<Spare> Spawn(uint64_t spare_id, bool isolate = true);

  // Waits for the zygote's Done(spare id): the spare was reaped.
  absl::StatusOr<wire::DoneMessage> Reaped(uint64_t spare_id);

  // Closes the supervisor's end of the zygote channel.
  void HangUp() { channel_.Reset(); }

  // The agent's wait status once it exits within `timeout` (again on later calls).
  absl::StatusOr<int> WaitExit(absl::Duration timeout);

  std::string Stderr() const;

 private:
  AgentProcess(pid_t pid, base::UniqueFd channel, std::string stderr_path)
      : pid_(pid), channel_(std::move(channel)), stderr_path_(std::move(stderr_path)) {}

  pid_t pid_;
  bool reaped_ = false;
  int wstatus_ = 0;
  base::UniqueFd channel_;
  std::string stderr_path_;
  std::deque<wire::ReceivedFrame> pending_;
};

// Sends `run` on the spare's child channel with `fds`, and returns the child's answer
// (Done, Failed or Error), or kUnavailable if the child hung up without one. A Compiled
// before it (allowed only for a Run with code) goes to `compiled` when given.
absl::StatusOr<wire::ReceivedFrame> RunOn(Spare& spare, const wire::RunMessage& run,
                                          absl::Span<const int> fds = {},
                                          std::string* compiled = nullptr);

// A unique, non-zero spare id per call in this process; distinct across processes too, so
// names a test derives from it never collide on the host.
uint64_t NextSpareId();

}  // namespace zygo::agents::conformance

#endif  // ZYGO_AGENTS_CONFORMANCE_AGENT_PROCESS_H_
