// What every warm-path bench does before it measures: print the host and the build,
// start its own supervisor, write handlers and register functions, and wait until they
// are warm. Parent side; needs what the supervisor needs (root or a delegated cgroup).
#ifndef ZYGO_BENCH_WARM_WARM_SETUP_H_
#define ZYGO_BENCH_WARM_WARM_SETUP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/common/host_info.h"
#include "bench/warm/warm_driver.h"
#include "bench/warm/warm_flags.h"
#include "bench/warm/warm_workload.h"
#include "sdk/cpp/zygo/api_connection.h"
#include "testing/supervisor_process.h"

namespace zygo::bench {

using ::zygo::testing::FindSupervisorBinary;
using ::zygo::testing::SupervisorProcess;

// Prints the host line, a note when the host was busy before measuring (load average
// above the CPU count), and which zygo and supervisor binaries run; returns the host.
HostInfo PrintHost(const WarmOptions& options, const std::string& supervisor_binary);

// Prints "zygo bench NAME: MESSAGE" to stderr (after flushing stdout) and returns 125.
int FailBench(const char* bench, const absl::Status& status);

// The start every warm-path bench shares: parses `kind`'s flags (125 on a bad one), prints
// the usage for --help (0), finds the supervisor binary (125 when there is none) and prints
// the host; then returns what `measure` returns.
using WarmMeasure = std::function<int(const WarmOptions& options,
                                      const std::string& supervisor_binary, const HostInfo& host)>;
int RunWarmPathBench(WarmBenchKind kind, const char* bench, int argc, char** argv,
                     const WarmMeasure& measure);

// How a warm-path bench ends once it has measured: `failed` (the number of bars that
// failed, or why measuring failed, reported with the end of the supervisor's log), the
// supervisor stopped, and the exit code (1 for a failed bar only with --strict).
struct SupervisorSession;
int FinishBench(const char* bench, const absl::StatusOr<int>& failed, SupervisorSession& session,
                bool strict);

// A started supervisor and one keep-alive connection to it.
struct SupervisorSession {
  std::unique_ptr<SupervisorProcess> process;
  std::unique_ptr<sdk::ApiConnection> api;
};
// `args`: more flags for the supervisor (--zygote-tree on).
absl::StatusOr<SupervisorSession> StartSession(const std::string& supervisor_binary,
                                               std::vector<std::string> args = {});

// Writes `handler_source` to the file of `spec.entry` in `dir` (handler.py of
// "handler.py:main"; making `dir`) when it is not empty, and registers `spec` with `dir`
// as its code directory.
absl::Status RegisterFunction(sdk::ApiConnection& api, const std::string& dir,
                              const std::string& handler_source, const FunctionSpecOptions& spec);

// Registers function "warm" (HandlerSource(0) in the session's work dir, `spares` spares)
// and waits until it is warm after `warmup_requests` untimed requests; the milliseconds
// that took.
absl::StatusOr<double> WarmTheWarmFunction(SupervisorSession& session, int spares,
                                           int warmup_requests);

// Polls GET /v1/functions until `name` is "warm" (at most 60 s), then sends `requests`
// untimed requests with `call`. Returns the milliseconds until it was warm.
absl::StatusOr<double> WaitWarm(sdk::ApiConnection& api, const std::string& name, int requests,
                                const CallFn& call);

// POST /v1/functions/NAME/exec[?script=DIGEST] with EventJson(index) on `api`; the
// reply body when the HTTP status is 200, else an error quoting it.
CallFn ExecCall(sdk::ApiConnection* api, const std::string& name);
absl::StatusOr<std::string> Exec(sdk::ApiConnection& api, const std::string& name,
                                 const std::string& script_digest, int index);

// CPU seconds the bench's helpers have used: the supervisor with everything it runs, and
// the peer when `peer` > 0 (for OtherWork, which subtracts them from the host's busy time).
std::optional<double> HelpersCpu(pid_t supervisor, pid_t peer);

// PUT /v1/scripts: the script's digest.
absl::StatusOr<std::string> PutScript(sdk::ApiConnection& api, const std::string& source);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_SETUP_H_
