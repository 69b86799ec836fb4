// `zygo exec`'s rendering of a reply: captured output first, then the result, then why it
// failed; the exit code follows the shell's conventions (1 raised, N exited N, 137 killed).
#include "cli/exec_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zygo::cli {
namespace {

using nlohmann::json;

// Field readers that tolerate a missing field or a null (the reply's optional parts).
const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it != object.end() ? *it : kNull;
}

std::string StringOf(const json& object, const char* key) {
  const json& value = Field(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

bool BoolOf(const json& object, const char* key) {
  const json& value = Field(object, key);
  return value.is_boolean() && value.get<bool>();
}

int64_t IntOf(const json& object, const char* key) {
  const json& value = Field(object, key);
  return value.is_number() ? value.get<int64_t>() : 0;
}

void Write(const std::string& data, FILE* file) {
  if (!data.empty()) fwrite(data.data(), 1, data.size(), file);
}

}  // namespace

ExecVerdict JudgeExecReply(const json& reply, const std::string& function) {
  if (BoolOf(reply, "ok")) return {};
  const json& outcome = Field(reply, "outcome");
  const json& error = Field(reply, "error");
  std::string status = StringOf(outcome, "status");
  std::string error_type = StringOf(error, "type");
  if (BoolOf(outcome, "timed_out") || status == "timeout" || error_type == "timeout") {
    const json& wall = Field(outcome, "wall_ms");
    std::string after =
        wall.is_number() ? absl::StrFormat(" after %.0f ms", wall.get<double>()) : "";
    return {kExitKilled, absl::StrCat(function, " was killed: it timed out", after)};
  }
  if (BoolOf(outcome, "oom_killed") || status == "oom" || error_type == "oom") {
    int64_t peak = IntOf(outcome, "peak_rss_kb");
    std::string detail = peak > 0 ? absl::StrCat(" (peak RSS ", peak, " kB)") : "";
    return {kExitKilled, absl::StrCat(function, " was killed: out of memory", detail)};
  }
  if (status == "nonzero_exit" || error_type == "nonzero_exit") {
    int64_t code = IntOf(outcome, "exit_code");
    // The request's own status; it printed its own reason, so zygo adds nothing.
    return {code > 0 && code < 256 ? static_cast<int>(code) : kExitHandlerRaised, ""};
  }
  if (status == "signaled" || error_type == "crashed") {
    int64_t signal = IntOf(outcome, "signal");
    return {signal > 0 && signal < 128 ? 128 + static_cast<int>(signal) : kExitKilled,
            absl::StrCat(function, " was killed by signal ", signal)};
  }
  std::string message = StringOf(error, "message");
  if (error_type.empty()) error_type = "Error";
  return {kExitHandlerRaised,
          absl::StrCat("error: ", error_type, message.empty() ? "" : ": ", message)};
}

int PrintExecReply(const json& reply, const std::string& function, bool whole_json, FILE* out,
                   FILE* err) {
  ExecVerdict verdict = JudgeExecReply(reply, function);
  if (whole_json) {
    Write(absl::StrCat(reply.dump(), "\n"), out);
    return verdict.exit_code;
  }
  Write(StringOf(reply, "stdout"), out);
  Write(StringOf(reply, "stderr"), err);
  for (const char* stream : {"stdout", "stderr"}) {
    if (BoolOf(reply, absl::StrCat(stream, "_truncated").c_str())) {
      fprintf(err, "zygo: the request's %s was cut short (the supervisor keeps 1 MiB)\n", stream);
    }
  }
  const json& result = Field(reply, "result");
  if (!result.is_null()) Write(absl::StrCat(result.dump(), "\n"), out);
  fflush(out);
  if (verdict.exit_code == kExitHandlerRaised) {
    std::string traceback = StringOf(Field(reply, "error"), "traceback");
    Write(traceback, err);
    if (!traceback.empty() && traceback.back() != '\n') Write("\n", err);
  }
  if (!verdict.message.empty()) {
    // The handler's own error line is not zygo's: it keeps the "error:" prefix alone.
    bool own = verdict.exit_code == kExitHandlerRaised;
    fprintf(err, "%s%s\n", own ? "" : "zygo: ", verdict.message.c_str());
  }
  return verdict.exit_code;
}

}  // namespace zygo::cli
