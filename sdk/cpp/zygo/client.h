// The C++ SDK: register functions with a running supervisor (`zygo serve`) and call them,
// over its unix socket. This header is the whole public surface; api_client.h and
// api_connection.h below it are the plumbing the CLI and the benches share.
//
//   zygo::sdk::Client zygo;  // the default socket: $ZYGO_SOCKET, else /run/zygo/zygo.sock
//                            // for root, else $XDG_RUNTIME_DIR/zygo/zygo.sock
//   absl::StatusOr<zygo::sdk::Function> up = zygo.UpFile("hello/hello.toml");
//   absl::StatusOr<zygo::sdk::Result> result = zygo.Exec("hello", R"({"name": "Ada"})");
//   if (result.ok() && result->ok) std::cout << result->result_json << "\n";
//   // A runtime pool (pool = true) runs a script it is given: def handler(event) in Python,
//   // function handler(event) in JavaScript.
//   result = zygo.RunScript("py-pool", "def handler(event):\n    return event * 2\n", "21");
//
// A Client is one keep-alive connection, made on first use: use one per thread. Errors are
// absl::Status: Unavailable when no supervisor answers on the socket, NotFound for an
// unknown function, InvalidArgument for a spec or an event the supervisor refused (its
// message names the problem, as `zygo up` prints it), ResourceExhausted when the
// supervisor's queue is full (HTTP 429; retry later). A request that ran and failed (the
// handler raised, the command exited non-zero, the deadline or the memory limit killed it)
// is not an error: it is a Result whose `ok` is false.
#ifndef ZYGO_SDK_CPP_ZYGO_CLIENT_H_
#define ZYGO_SDK_CPP_ZYGO_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sdk/cpp/zygo/api_client.h"

namespace zygo::sdk {

// A registered function, as `zygo ls` lists it.
struct Function {
  std::string name;
  std::string image;    // "host", "dir:/path" or an OCI reference
  std::string runtime;  // "python", "node" or "exec"
  std::string entry;    // "handler.py:main", the command, or "" for a runtime pool
  bool pool = false;
  std::string state;  // "cold", "warming" or "warm"
  int64_t requests = 0;
  std::string progress;  // the last line of its image's pull in the latest warm-up
  std::string error;     // why its last warm-up failed; "" once one succeeded
  int64_t warm_ups = 0;  // warm-ups that succeeded since it was registered
  double warm_ms = 0;    // the last successful warm-up, until the handler was imported
  bool forked = false;   // its zygote was forked from a runtime zygote (the zygote tree)
};

// One request's answer.
struct Result {
  bool ok = false;          // the handler returned, or the command exited 0
  std::string result_json;  // the handler's return value as JSON text; "null" for exec
  std::string stdout_data;  // what the request printed (at most 1 MiB each)
  std::string stderr_data;
  // When the handler raised: its type ("ValueError"), message and traceback; "timeout"
  // when the deadline ended it.
  std::string error_type;
  std::string error_message;
  std::string traceback;
  // How it ended: "ok", "handler_error", "nonzero_exit", "timeout", "oom", "signaled",
  // "pids_limit" or "seccomp_killed" (docs/supervisor.md).
  std::string status;
  bool timed_out = false;   // the deadline (limits.timeout) killed it
  bool oom_killed = false;  // its memory limit (limits.memory) killed it
  int exit_code = 0;
  double wall_ms = 0;
};

class Client {
 public:
  // `socket_path` empty: $ZYGO_SOCKET, else the default socket (as the `zygo` CLI finds it).
  explicit Client(absl::string_view socket_path = "");

  // Registers the spec in `toml` (docs/function-spec.md); a relative `code` is resolved
  // against `base_dir`, and `origin` names the text in errors ("hello.toml:4: ...").
  // Registering a name again replaces that function.
  absl::StatusOr<Function> Up(absl::string_view toml, absl::string_view base_dir,
                              absl::string_view origin = "spec.toml");
  // Up() of a spec file, relative paths resolved against its directory, as `zygo up`.
  absl::StatusOr<Function> UpFile(const std::string& path);
  absl::Status Down(absl::string_view name);
  absl::StatusOr<std::vector<Function>> List();

  // Calls a Python function with `event_json` (JSON text) as its event, waiting for it.
  absl::StatusOr<Result> Exec(absl::string_view name, absl::string_view event_json = "null");
  // Runs an exec function with `stdin_data` as its stdin.
  absl::StatusOr<Result> ExecWithStdin(absl::string_view name, absl::string_view stdin_data);

  // Stores a runtime pool's script (content-addressed; storing it again is free) and
  // returns its digest ("sha256:<hex>").
  absl::StatusOr<std::string> PutScript(absl::string_view source);
  // Runs the stored script `digest` in the runtime pool `pool` with `event_json`.
  absl::StatusOr<Result> ExecScript(absl::string_view pool, absl::string_view digest,
                                    absl::string_view event_json = "null");
  // PutScript, then ExecScript: one call for a script the caller holds as text.
  absl::StatusOr<Result> RunScript(absl::string_view pool, absl::string_view source,
                                   absl::string_view event_json = "null");

  // OK when the supervisor answers; Unavailable when nobody serves the socket.
  absl::Status Health();

  const std::string& socket_path() const { return api_.socket_path(); }

 private:
  absl::StatusOr<Result> Post(absl::string_view name, absl::string_view query,
                              absl::string_view body, absl::string_view content_type);

  ApiClient api_;
};

}  // namespace zygo::sdk

#endif  // ZYGO_SDK_CPP_ZYGO_CLIENT_H_
