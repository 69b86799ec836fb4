// A supervisor (`zygo serve`) started for one bench: its own state dir and sockets in a
// fresh directory under /tmp, stopped with SIGTERM and cleaned up when the owner goes.
// Parent side; needs what the supervisor needs (root or a delegated cgroup).
#ifndef ZYGO_BENCH_SUPERVISOR_PROCESS_H_
#define ZYGO_BENCH_SUPERVISOR_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::bench {

// The supervisor binary: `zygo-supervisor` or `supervisor` next to zygo, in
// bazel-bin/supervisor, or in zygo's runfiles (as cli/helper_binary.h finds helpers).
// `override_path`, when not empty, is used as it is.
absl::StatusOr<std::string> FindSupervisorBinary(const std::string& override_path);

class SupervisorProcess {
 public:
  // Makes /tmp/zygo-bench-XXXXXX (short, since a unix socket path must fit in 108
  // bytes), starts `binary --listen DIR/api.sock --grpc-listen DIR/grpc.sock --state-dir
  // DIR/state --no-demo` with its output in DIR/supervisor.log, and waits up to 15 s for
  // GET /v1/health. On failure the log's tail is in the error.
  static absl::StatusOr<std::unique_ptr<SupervisorProcess>> Start(const std::string& binary);

  // Stop()s if still running, then removes the directory.
  ~SupervisorProcess();
  SupervisorProcess(const SupervisorProcess&) = delete;
  SupervisorProcess& operator=(const SupervisorProcess&) = delete;

  // SIGTERM, then waits up to 10 s (SIGKILL after that, reported as an error). An
  // exit status other than 0 is an error that quotes the log.
  absl::Status Stop();

  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  const std::string& socket_path() const { return socket_; }
  // A directory for the bench's own files (handlers, scripts), removed with the rest.
  std::string WorkDir() const { return dir_ + "/work"; }
  // The last `bytes` of the supervisor's output.
  std::string LogTail(size_t bytes = 2000) const;

 private:
  explicit SupervisorProcess(std::string dir);
  absl::Status Spawn(const std::string& binary);
  absl::Status WaitHealthy();

  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_SUPERVISOR_PROCESS_H_
