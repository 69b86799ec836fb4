// How `zygo exec` shows one warm request's reply (the API's exec JSON) and which exit code
// it ends with, kept apart from the HTTP call so it is tested without a supervisor.
#ifndef ZYGO_CLI_EXEC_OUTPUT_H_
#define ZYGO_CLI_EXEC_OUTPUT_H_

#include <stdio.h>

#include <string>

#include "nlohmann/json.hpp"

namespace zygo::cli {

// Exit codes of `zygo exec` besides the request's own exit code.
inline constexpr int kExitHandlerRaised = 1;
inline constexpr int kExitKilled = 137;  // timeout or OOM, like a shell's 128 + SIGKILL
inline constexpr int kExitZygoFailed = 125;

// What the reply means for the caller: the exit code, and the line to print on stderr
// ("" when there is none). `function` names the function in that line.
struct ExecVerdict {
  int exit_code = 0;
  std::string message;
};
ExecVerdict JudgeExecReply(const nlohmann::json& reply, const std::string& function);

// Prints `reply` and returns JudgeExecReply's exit code. By default: the request's captured
// stdout and stderr copied to `out` and `err`, then the handler's result as one line of
// JSON on `out` (none when it is null, so an exec function's output is exactly its own),
// then, on failure, the traceback and the verdict on `err`. With `whole_json`: only the
// reply object, as one line on `out`.
int PrintExecReply(const nlohmann::json& reply, const std::string& function, bool whole_json,
                   FILE* out, FILE* err);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_EXEC_OUTPUT_H_
