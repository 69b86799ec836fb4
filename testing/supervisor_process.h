// A real supervisor (`zygo serve`) as a child process, for a test or a bench: its own
// sockets, state dir and log in one short directory, health-checked before use, driven
// through its HTTP API, and stopped with SIGTERM (as an operator stops it, so it removes
// its cgroups) when its owner goes. Parent side; needs what the supervisor needs (root or
// a delegated cgroup).
#ifndef ZYGO_TESTING_SUPERVISOR_PROCESS_H_
#define ZYGO_TESTING_SUPERVISOR_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/api_client.h"

namespace zygo::testing {

// The supervisor binary: `override_path` when given (it must be executable), else
// `zygo-supervisor` or `supervisor` beside this program, in bazel-bin/supervisor, or in
// this program's runfiles (base::FindHelperBinary).
absl::StatusOr<std::string> FindSupervisorBinary(const std::string& override_path = "");

class SupervisorProcess {
 public:
  struct Options {
    std::string binary;  // empty: FindSupervisorBinary()
    // An existing directory, short enough for unix socket paths (108 bytes), for the
    // sockets, state and log; empty: a fresh /tmp/zygo-supervisor-XXXXXX, removed with
    // this object (never $TMPDIR, which in a test is too deep).
    std::string dir;
    // The supervisor's whole environment (zygo-net and pasta inherit it); empty: ours.
    std::vector<std::string> env;
    // When >= 0, the child joins this network namespace before exec.
    int netns_fd = -1;
    // When not empty, a program that runs the supervisor (its argv[0] goes first).
    std::string wrapper;
    // More flags for the supervisor (--code-root DIR, "--http-idle-timeout", "1s", ...).
    std::vector<std::string> args;
    // When not 0, the child's RLIMIT_NOFILE (soft, hard) before exec.
    uint64_t open_files_soft = 0;
    uint64_t open_files_hard = 0;
  };

  // Forks and execs `binary --listen DIR/http.sock --grpc-listen DIR/grpc.sock --state-dir
  // DIR/state --no-demo ARGS...` with its output in DIR/log, then returns once GET
  // /v1/health answers (up to 30 s: under qemu TCG a supervisor that first sweeps a
  // killed one's cgroups takes more than 10 s). The errors quote its log.
  static absl::StatusOr<std::unique_ptr<SupervisorProcess>> Start(const Options& options);

  // Stop() if still running (a failure is printed), then removes the directory if Start
  // made it.
  ~SupervisorProcess();
  SupervisorProcess(const SupervisorProcess&) = delete;
  SupervisorProcess& operator=(const SupervisorProcess&) = delete;

  // SIGTERM, then waits up to `grace` (then SIGKILL). An error unless it exited 0; the
  // error quotes the log's tail. OK when it was already stopped.
  absl::Status Stop(std::chrono::seconds grace = std::chrono::seconds(10));
  // SIGKILL, as a crash or the OOM killer would end it, and reaps it: nothing of it gets
  // to clean up.
  void Kill();

  // POST /v1/functions: registers `spec` (TOML) as NAME.toml with code in `base_dir`.
  absl::Status Register(const std::string& name, const std::string& spec,
                        const std::string& base_dir);
  // POST /v1/functions/NAME/exec with `event`; the reply.
  absl::StatusOr<nlohmann::json> Exec(const std::string& name, const nlohmann::json& event);
  // The function's state in GET /v1/functions ("warm", "cold", ...), or "missing".
  std::string State(const std::string& name);

  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  std::string http_socket() const { return dir_ + "/http.sock"; }
  std::string grpc_socket() const { return dir_ + "/grpc.sock"; }
  // When Start made the directory: one for the owner's own files (handlers, scripts),
  // removed with the rest.
  std::string WorkDir() const { return dir_ + "/work"; }
  sdk::ApiClient& api() { return api_; }
  // The supervisor's output, whole or its last `bytes`.
  std::string Log() const;
  std::string LogTail(size_t bytes = 2000) const;

 private:
  SupervisorProcess(std::string dir, bool owns_dir);
  absl::Status Spawn(const Options& options, const std::string& binary);
  absl::Status WaitHealthy();

  std::string dir_;
  bool owns_dir_ = false;
  pid_t pid_ = -1;
  sdk::ApiClient api_;
};

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_SUPERVISOR_PROCESS_H_
