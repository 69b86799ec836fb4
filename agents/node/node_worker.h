// A Node worker (worker.js) as the agent sees it: started ahead of its request with the
// handler loaded, its stdout and stderr pipes relayed by the agent, one request, then its
// exit. Node's threads and libuv do not survive fork(), so a request's fresh process is a
// fresh `node`, not a fork of a warmed one (docs/agents.md, "The Node agent").
#ifndef ZYGO_AGENTS_NODE_NODE_WORKER_H_
#define ZYGO_AGENTS_NODE_NODE_WORKER_H_

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::node {

enum class WorkerMode {
  kFunction,  // loads --entry's handler, then serves one request
  kPool,      // loads nothing; the request carries a script that defines handler(event)
  kCheck,     // loads the handler, says whether it could, and exits (the zygote's start)
};

struct WorkerCommand {
  std::string node;  // node's path as the sandbox sees it
  WorkerMode mode = WorkerMode::kFunction;
  std::string code_dir;   // what the entry's FILE is relative to
  std::string entry;      // FILE:FUNCTION; empty for a pool
  size_t max_result = 0;  // the most bytes of JSON a result may take
  // worker.js as the worker starts it, at its fd 4 (node_snapshot.h): a sealed memfd of
  // its source (WorkerSource), or of its startup snapshot when `snapshot`.
  int code_fd = -1;
  bool snapshot = false;
};

// What a worker said of itself once it had loaded the handler.
struct WorkerTraits {
  bool esm = false;               // the handler is an ES module (loaded with import())
  bool builtin_snapshot = false;  // this Node starts from a startup snapshot of its own
};

// An error as the worker described it: the thrown value's class, message and stack.
struct WorkerError {
  std::string type;
  std::string message;
  std::string stack;
};

// What a worker said after a request: its result as JSON text, or its error.
struct WorkerAnswer {
  std::optional<std::string> result;
  WorkerError error;  // when result is empty
};

// How a worker ended without answering.
struct WorkerExit {
  bool signalled = false;
  int code = 0;  // the exit status, or the signal
};

class Worker {
 public:
  // Forks and execs node on `command.code_fd` with the control socket at fd 3, stdin
  // /dev/null and stdout/stderr pipes back to this process; it dies with the caller
  // (PR_SET_PDEATHSIG) and starts with no signal blocked. It inherits the caller's cgroup,
  // namespaces, Landlock domain, seccomp filter and environment.
  static absl::StatusOr<Worker> Start(const WorkerCommand& command);

  pid_t pid() const { return pid_; }
  // Once AwaitReady said ready.
  const WorkerTraits& traits() const { return traits_; }

  // Waits until the worker has loaded its handler: nullopt when ready, else the load's
  // error. What it printed meanwhile (its imports') goes to `log_fd`, not to a request.
  // The answer is kept: a second call returns it at once.
  absl::StatusOr<std::optional<WorkerError>> AwaitReady(int log_fd);

  // Sends the request: the pool script's digest and source (empty for a function) and the
  // event as JSON text (empty for none).
  absl::Status SendRequest(const std::string& entry, const std::string& code,
                           const std::string& event);

  // Waits for the request's answer while copying the worker's stdout and stderr to
  // `out_fd` and `err_fd`, then copies what is left in the pipes. Unavailable when the
  // worker ended without answering (ReapExit then says how).
  absl::StatusOr<WorkerAnswer> AwaitAnswer(int out_fd, int err_fd);

  // Reaps the worker, which has closed its channel, and says how it ended.
  WorkerExit ReapExit();

 private:
  // AwaitReady's first wait.
  absl::StatusOr<std::optional<WorkerError>> ReceiveReadiness(int log_fd);
  // The next control message, copying the pipes to `out_fd`/`err_fd` while waiting.
  absl::StatusOr<std::string> ReceiveRelaying(int out_fd, int err_fd);
  // Copies whatever the pipes hold now.
  void DrainPipes(int out_fd, int err_fd);

  pid_t pid_ = -1;
  std::optional<absl::StatusOr<std::optional<WorkerError>>> readiness_;
  WorkerTraits traits_;
  base::UniqueFd control_;
  base::UniqueFd out_;  // read ends, non-blocking; invalid once at EOF
  base::UniqueFd err_;
};

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_NODE_WORKER_H_
