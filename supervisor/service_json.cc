// The JSON forms of ExecReply and FunctionInfo that the HTTP API returns and `zygo exec`
// prints. Never throws: bytes that are not UTF-8 come out as U+FFFD.
#include <exception>
#include <string>

#include "nlohmann/json.hpp"
#include "supervisor/service.h"

namespace zygo::supervisor {
namespace {

// ordered_json keeps fields in the documented order, which reads better in a terminal.
using json = nlohmann::ordered_json;

constexpr char kEncodeFailure[] =
    R"({"error":{"code":"internal","message":"could not encode the reply"}})";

// Handler output is arbitrary bytes; `replace` keeps dump() from throwing on them.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The handler's return value is JSON text from the agent. Valid JSON is embedded as it
// came (key order, big numbers and all); accept() validates without building a tree, so
// deep nesting costs no recursion here. Anything else is still shown, as a string.
std::string ResultText(const std::string& result_json) {
  if (result_json.empty()) return "null";
  if (json::accept(result_json)) return result_json;
  return Dump(json(result_json));
}

json ErrorValue(const ExecReply& reply) {
  if (reply.error_type.empty() && reply.error_message.empty() && reply.traceback.empty()) {
    return nullptr;
  }
  return json{
      {"type", reply.error_type}, {"message", reply.error_message}, {"traceback", reply.traceback}};
}

json OutcomeValue(const RequestOutcome& outcome) {
  json value{{"status", core::OutcomeStatusName(outcome.status)},
             {"exit_code", outcome.exit_code},
             {"signal", outcome.signal},
             {"timed_out", outcome.timed_out},
             {"oom_killed", outcome.oom_killed},
             {"peak_rss_kb", outcome.peak_rss_kb},
             {"wall_ms", outcome.wall_ms},
             {"limits_applied", outcome.limits_applied}};
  if (!outcome.seccomp_syscall.empty()) {
    value["seccomp_kill"] = {{"syscall", outcome.seccomp_syscall}, {"arch", outcome.seccomp_arch}};
  }
  return value;
}

json TimingsValue(const PhaseTimings& timings) {
  return json{{"fork", timings.fork_us},
              {"admit", timings.admit_us},
              {"run", timings.run_us},
              {"reply", timings.reply_us},
              {"total", timings.total_us}};
}

void AppendField(std::string& out, const char* key, const std::string& value_text) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += key;
  out += "\":";
  out += value_text;
}

}  // namespace

std::string ExecReplyToJson(const ExecReply& reply) {
  try {
    std::string out = "{";
    AppendField(out, "ok", reply.ok ? "true" : "false");
    AppendField(out, "result", ResultText(reply.result_json));
    AppendField(out, "error", Dump(ErrorValue(reply)));
    AppendField(out, "stdout", Dump(json(reply.stdout_data)));
    AppendField(out, "stderr", Dump(json(reply.stderr_data)));
    AppendField(out, "stdout_truncated", reply.stdout_truncated ? "true" : "false");
    AppendField(out, "stderr_truncated", reply.stderr_truncated ? "true" : "false");
    AppendField(out, "outcome", Dump(OutcomeValue(reply.outcome)));
    AppendField(out, "timings_us", Dump(TimingsValue(reply.timings)));
    out += "}";
    return out;
  } catch (const std::exception&) {
    // Only allocation failure is left; still answer with JSON.
    return kEncodeFailure;
  }
}

std::string FunctionInfoToJson(const FunctionInfo& info) {
  try {
    return Dump(json{{"name", info.name},
                     {"image", info.image},
                     {"runtime", RuntimeName(info.runtime)},
                     {"entry", info.entry},
                     {"pool", info.pool},
                     {"state", FunctionStateName(info.state)},
                     {"requests", info.requests},
                     {"memory_bytes", info.memory_bytes},
                     {"timeout_ms", info.timeout_ms},
                     {"cold_after_ms", info.cold_after_ms},
                     {"spec_path", info.spec_path},
                     {"progress", info.progress},
                     {"error", info.error},
                     {"warm_ups", info.warm_ups},
                     {"warm_ms", info.warm_ms},
                     {"forked", info.forked}});
  } catch (const std::exception&) {
    return kEncodeFailure;
  }
}

}  // namespace zygo::supervisor
