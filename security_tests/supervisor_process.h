// The supervisor binary (//supervisor) as a child of a security test, on the fake
// internet's machine (security_tests/fake_internet.h), driven through its HTTP API.
#ifndef ZYGO_SECURITY_TESTS_SUPERVISOR_PROCESS_H_
#define ZYGO_SECURITY_TESTS_SUPERVISOR_PROCESS_H_

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

class SupervisorProcess {
 public:
  struct Options {
    // An existing, short directory (unix socket paths must fit in sun_path): the
    // supervisor's sockets, state and output (`dir`/log) go there.
    std::string dir;
    // NAME=VALUE added to the environment, which is otherwise PATH and ZYGO_DNS_UPSTREAM
    // (the fake internet's DNS server) only; zygo-net and pasta inherit it.
    std::string marker;
    // When >= 0, the child joins this network namespace before exec; else it stays in
    // the calling thread's.
    int netns_fd = -1;
    // When not empty, a program that runs the supervisor (its argv[0] goes first).
    std::string wrapper;
    // More flags for the supervisor (--code-root DIR, "--http-idle-timeout", "1s", ...).
    std::vector<std::string> args;
    // When not 0, the child's RLIMIT_NOFILE (soft, hard) before exec.
    uint64_t open_files_soft = 0;
    uint64_t open_files_hard = 0;
  };

  // Forks and execs the supervisor, then returns once GET /v1/health answers (up to
  // 30 s). The errors quote its log.
  static absl::StatusOr<std::unique_ptr<SupervisorProcess>> Start(const Options& options);

  // Stop(10 s) if still running.
  ~SupervisorProcess();
  SupervisorProcess(const SupervisorProcess&) = delete;
  SupervisorProcess& operator=(const SupervisorProcess&) = delete;

  // SIGTERM, then waits up to `grace`; the wait status, or -1 (then it was SIGKILLed,
  // or had already been stopped).
  int Stop(std::chrono::seconds grace);
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
  std::string http_socket() const { return dir_ + "/http.sock"; }
  std::string grpc_socket() const { return dir_ + "/grpc.sock"; }
  sdk::ApiClient& api() { return api_; }
  std::string Log() const;

 private:
  explicit SupervisorProcess(const std::string& dir);
  absl::Status WaitHealthy();

  pid_t pid_ = -1;
  std::string dir_;
  sdk::ApiClient api_;
};

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_SUPERVISOR_PROCESS_H_
