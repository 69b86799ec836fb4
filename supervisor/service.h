// The supervisor's one service core, as the API front ends (HTTP/JSON, gRPC) and the CLI
// see it: register and remove functions, store scripts, run requests. Every method is
// thread-safe; Exec completes asynchronously.
#ifndef ZYGO_SUPERVISOR_SERVICE_H_
#define ZYGO_SUPERVISOR_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/outcome.h"

namespace zygo::supervisor {

// What a function's requests run in: a Python handler in a warm interpreter, a JavaScript
// handler in a Node worker started ahead of demand, or a command.
// When to try again after a full queue (HTTP 429's Retry-After, gRPC's retry-after
// trailer), in seconds. The queue drains at the pace of requests (milliseconds
// to a function's timeout), so one second is long enough to matter and short enough that a
// client that honours it loses little; RFC 9110 allows no finer unit.
inline constexpr int kRetryAfterSeconds = 1;

enum class Runtime { kPython, kExec, kNode };
const char* RuntimeName(Runtime runtime);  // "python", "exec", "node"
std::optional<Runtime> ParseRuntime(absl::string_view name);

enum class FunctionState {
  kCold,     // no zygote: the next request warms one
  kWarming,  // a zygote is starting
  kWarm,     // a zygote is serving
};
const char* FunctionStateName(FunctionState state);  // "cold", "warming", "warm"

// What `zygo ls` and GET /functions show for one function or runtime pool.
struct FunctionInfo {
  std::string name;
  std::string image;
  Runtime runtime = Runtime::kPython;
  std::string entry;  // "file.py:function", "file.js:function", the command, or "" for a pool
  bool pool = false;  // a runtime pool: scripts arrive with requests
  FunctionState state = FunctionState::kCold;
  int64_t requests = 0;
  int64_t memory_bytes = 0;
  int64_t timeout_ms = 0;
  int64_t cold_after_ms = 0;
  std::string spec_path;  // the TOML file it was registered from
  // The last line of its image's pull in the latest warm-up ("" when it pulled nothing).
  std::string progress;
  // Why its last warm-up failed; "" once one succeeded (or none has run).
  std::string error;
  int64_t warm_ups = 0;  // warm-ups that succeeded since it was registered
  // The last warm-up that succeeded: its sandbox's start (or its fork from a runtime zygote)
  // until the agent's Hello, in milliseconds; 0 before one did.
  double warm_ms = 0;
  // Its zygote was forked from a runtime zygote (the zygote tree), not started in a
  // sandbox of its own; as of the last warm-up.
  bool forked = false;
};

struct ExecRequest {
  std::string function;       // a function's or a runtime pool's name
  std::string script_digest;  // pool calls only: "sha256:<64 hex>" from PutScript
  std::string event_json;     // the event as JSON text; empty means null
  std::string stdin_data;     // warm-exec: the request's standard input
};

// Per-phase timings of one request, in microseconds (the supervisor's clock).
struct PhaseTimings {
  int64_t fork_us = 0;   // the spare process was made (ahead of demand: 0 on the request path)
  int64_t admit_us = 0;  // it was put into its own cgroup (likewise)
  int64_t run_us = 0;    // request sent until the handler's reply arrived
  int64_t reply_us = 0;  // reply received until it was handed to the front end
  int64_t total_us = 0;  // Exec called until the callback
};

// How the request's process ended (the warm-path counterpart of `zygo run --outcome`).
struct RequestOutcome {
  // Never kSetupError: a request that could not start is an ExecReply error instead.
  core::OutcomeStatus status = core::OutcomeStatus::kOk;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool oom_killed = false;
  int64_t peak_rss_kb = 0;
  double wall_ms = 0;
  // seccomp_killed: the call the request was killed for, and its ABI ("i386", "x32").
  std::string seccomp_syscall;
  std::string seccomp_arch;
  // False when it ran without a cgroup of its own (--allow-unlimited, no usable cgroups).
  bool limits_applied = false;
};

// The reply to one request. `status` is OK when the request ran (even if the handler
// raised or the process was killed: see `error` and `outcome`); otherwise it is a typed
// failure to run it at all: NotFound (unknown function or script), InvalidArgument
// (malformed event), Unavailable (the zygote died; it is being re-warmed),
// ResourceExhausted (over capacity, or an event over kMaxEventBytes: event_limit.h),
// Cancelled (the caller went away), Internal.
struct ExecReply {
  absl::Status status;
  bool ok = false;          // the handler returned (or the command exited 0)
  std::string result_json;  // python, node: the handler's return value as JSON text
  // When the handler raised or the process did not finish: error.type is the exception's
  // class name, or "timeout", "oom", "crashed" (killed by a signal), "seccomp" (killed for
  // a call from a foreign ABI), "nonzero_exit".
  std::string error_type;
  std::string error_message;
  std::string traceback;
  std::string stdout_data;  // captured, at most kMaxCapturedBytes each
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  RequestOutcome outcome;
  PhaseTimings timings;
};

inline constexpr size_t kMaxCapturedBytes = 1 << 20;

// A request in flight. Cancel() kills it (its whole cgroup); the callback then gets
// Cancelled. Safe to call at any time, from any thread, more than once.
class RequestHandle {
 public:
  virtual ~RequestHandle() = default;
  virtual void Cancel() = 0;
};

class Service {
 public:
  virtual ~Service() = default;

  // Registers (or replaces) the function the TOML text describes and starts warming it.
  // `origin` names the text in errors ("hello.toml"); `base_dir` resolves relative paths
  // in it. Errors name the file, line and field.
  virtual absl::StatusOr<FunctionInfo> Up(const std::string& spec_toml, const std::string& origin,
                                          const std::string& base_dir) = 0;
  virtual absl::Status Down(const std::string& name) = 0;
  virtual std::vector<FunctionInfo> List() = 0;

  // Stores a runtime-pool script and returns its digest ("sha256:<hex>").
  virtual absl::StatusOr<std::string> PutScript(const std::string& source) = 0;

  // Runs one request. `done` is called exactly once, on a supervisor thread (never
  // inside Exec itself), and must not block.
  using ExecCallback = std::function<void(ExecReply)>;
  virtual std::shared_ptr<RequestHandle> Exec(ExecRequest request, ExecCallback done) = 0;
};

// The JSON the HTTP API returns for a reply and `zygo exec` prints (one object, stable
// field names: ok, result, error{type,message,traceback}, stdout, stderr, outcome{...},
// timings_us{fork,admit,run,reply,total}).
std::string ExecReplyToJson(const ExecReply& reply);
std::string FunctionInfoToJson(const FunctionInfo& info);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SERVICE_H_
