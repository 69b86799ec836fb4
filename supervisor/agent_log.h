// An agent's own output (its stdout and stderr, one pipe): read on a thread of its own into
// the supervisor's log under the function's name, its end kept for error messages (an
// import error's traceback). Parent side; thread-safe.
#ifndef ZYGO_SUPERVISOR_AGENT_LOG_H_
#define ZYGO_SUPERVISOR_AGENT_LOG_H_

#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::supervisor {

class AgentLog {
 public:
  explicit AgentLog(std::string name) : name_(std::move(name)) {}
  ~AgentLog() { Join(); }
  AgentLog(const AgentLog&) = delete;
  AgentLog& operator=(const AgentLog&) = delete;

  // A new pipe: its read end is read from now on; the write end is returned, for the agent.
  // Once every copy of the write end is closed, the reader ends. Call once.
  absl::StatusOr<base::UniqueFd> Open();
  // Waits for the reader to end (every writer gone). Idempotent.
  void Join();
  // The last few KiB it read.
  std::string Tail() const;

 private:
  void ReadLoop(base::UniqueFd read_end);

  const std::string name_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::string tail_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_AGENT_LOG_H_
