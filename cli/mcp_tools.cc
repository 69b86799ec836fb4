// The four tools: their schemas and descriptions (what the model reads), argument checks,
// and the API calls behind them.
#include "cli/mcp_tools.h"

#include <cctype>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/mcp_scripts.h"
#include "sdk/cpp/zygo/api_client.h"

namespace zygo::cli::mcp {
namespace {

using nlohmann::json;
using sdk::ApiClient;

constexpr char kRunPythonDescription[] =
    "Run Python 3 code in a fresh, isolated sandbox (a fork of a warm interpreter: "
    "milliseconds). Nothing is kept between calls; each gets its own empty writable /tmp, no "
    "network unless the operator allowed hosts, and the pool's memory and time limits. "
    "Write either plain code (a script: what it prints is `stdout`; when its last statement "
    "is an expression, its value is `result`, as in a notebook cell) or code that defines "
    "`def handler(event)`, which is called and whose return value is `result`. The variable "
    "`event` holds the `event` argument (None when omitted); top-level `await` works. The "
    "standard library is available. An exception is reported with its traceback (isError true).";

constexpr char kRunJavaScriptDescription[] =
    "Run JavaScript (Node.js, CommonJS) in a fresh, isolated sandbox (a Node worker started "
    "ahead of demand: milliseconds). Nothing is kept between calls; each gets its own empty "
    "writable /tmp, no network unless the operator allowed hosts, and the pool's memory and "
    "time limits. Write either plain code (what console.log prints is `stdout`; the value of "
    "the last expression statement is `result`, as a REPL shows it; top-level `await` and "
    "`return` work too, and then `return` gives the result) or code that defines "
    "`function handler(event)` (or sets `exports.handler`), which is called, promises "
    "awaited, and whose return value is `result`. `event` holds the `event` argument (null "
    "when omitted); `require` loads Node's built-in modules. A thrown error is reported with "
    "its stack (isError true).";

constexpr char kCallFunctionDescription[] =
    "Call a function registered with the Zygo supervisor (see list_functions) with an "
    "event, and get its result, stdout, stderr and outcome. The function runs in its own "
    "sandbox with the limits and network its spec gives it.";

constexpr char kListFunctionsDescription[] =
    "List the functions and runtime pools registered with the Zygo supervisor: name, "
    "runtime (python, node, exec), whether it is a pool, its state (cold, warming, warm) "
    "and, when its last warm-up failed, why.";

json EventSchema() {
  return {{"description",
           "The event: any JSON value, bound to `event` and passed to handler(event). "
           "Default null."}};
}

json RunInputSchema(const char* language) {
  return {{"type", "object"},
          {"properties",
           {{"code", {{"type", "string"}, {"description", absl::StrCat("The ", language, " code.")}}},
            {"event", EventSchema()}}},
          {"required", {"code"}},
          {"additionalProperties", false}};
}

json ExecOutputSchema() {
  return {
      {"type", "object"},
      {"properties",
       {{"ok", {{"type", "boolean"}, {"description", "true when the code ran to its end"}}},
        {"status",
         {{"type", "string"},
          {"description",
           "ok, handler_error (it raised), timeout, oom, pids_limit, signaled, nonzero_exit, "
           "seccomp_killed, or not_run (it never ran: see error)"}}},
        {"result", {{"description", "the return value (JSON); null when there is none"}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"stdout_truncated", {{"type", "boolean"}}},
        {"stderr_truncated", {{"type", "boolean"}}},
        {"error",
         {{"type", {"object", "null"}},
          {"description", "why it failed: type, message and traceback; null when ok"}}},
        {"outcome",
         {{"type", "object"},
          {"description",
           "how the process ended: status, exit_code, signal, timed_out, oom_killed, "
           "peak_rss_kb, wall_ms"}}}}},
      {"required", {"ok", "status", "stdout", "stderr"}}};
}

// `annotations`: the hints of 2025-03-26 on (MCP's ToolAnnotations), given with the
// output schema, from 2025-06-18 on.
json Tool(const char* name, const char* title, const char* description, json input,
          json output, json annotations, bool with_output_schema) {
  json tool = {{"name", name}, {"description", description}, {"inputSchema", std::move(input)}};
  if (with_output_schema) {
    tool["title"] = title;
    tool["outputSchema"] = std::move(output);
    tool["annotations"] = std::move(annotations);
  }
  return tool;
}

// A call changes nothing outside its own sandbox, and repeats give new processes.
json RunAnnotations(bool open_world) {
  return {{"readOnlyHint", false},
          {"destructiveHint", false},
          {"idempotentHint", false},
          {"openWorldHint", open_world}};
}

// The arguments' keys must be among `allowed`, and each of `required` present.
std::string CheckKeys(const json& arguments, const std::set<std::string>& allowed,
                      const std::set<std::string>& required) {
  for (const auto& [key, value] : arguments.items()) {
    if (allowed.count(key) == 0) {
      return absl::StrCat("unknown argument \"", key, "\" (the arguments are ",
                          absl::StrJoin(allowed, ", "), ")");
    }
  }
  for (const std::string& key : required) {
    if (!arguments.contains(key)) return absl::StrCat("\"", key, "\" is required");
  }
  return "";
}

ToolResult BadArguments(std::string message) {
  ToolResult result;
  result.kind = ToolResult::Kind::kBadArguments;
  result.message = std::move(message);
  return result;
}

std::string SnakeCode(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

ToolResult ExecToolResult(const json& reply) {
  ToolResult tool;
  json structured = json::object();
  for (const char* key : {"ok", "result", "error", "stdout", "stderr", "stdout_truncated",
                          "stderr_truncated", "outcome"}) {
    if (auto it = reply.find(key); it != reply.end()) structured[key] = *it;
  }
  if (!structured.contains("ok") || !structured["ok"].is_boolean()) structured["ok"] = false;
  for (const char* key : {"stdout", "stderr"}) {
    if (!structured.contains(key) || !structured[key].is_string()) structured[key] = "";
  }
  std::string status = structured["ok"].get<bool>() ? "ok" : "handler_error";
  if (auto outcome = reply.find("outcome"); outcome != reply.end() && outcome->is_object()) {
    if (auto given = outcome->find("status"); given != outcome->end() && given->is_string()) {
      status = given->get<std::string>();
    }
  }
  structured["status"] = status;
  tool.is_error = !structured["ok"].get<bool>();
  tool.structured = std::move(structured);
  return tool;
}

ToolResult NotRunToolResult(const absl::Status& status) {
  ToolResult tool;
  tool.is_error = true;
  tool.structured = {{"ok", false},
                     {"status", "not_run"},
                     {"result", nullptr},
                     {"stdout", ""},
                     {"stderr", ""},
                     {"error",
                      {{"type", SnakeCode(status.code())},
                       {"message", std::string(status.message())}}}};
  return tool;
}

SupervisorTools::SupervisorTools(std::string socket_path, PoolKeeper& pools,
                                 bool pools_networked)
    : socket_path_(std::move(socket_path)), pools_(pools), pools_networked_(pools_networked) {}

json SupervisorTools::List(bool with_output_schema) const {
  json call_input = {
      {"type", "object"},
      {"properties",
       {{"name", {{"type", "string"}, {"description", "the function's name"}}},
        {"event", EventSchema()},
        {"stdin",
         {{"type", "string"},
          {"description",
           "for a command function (runtime exec) only: its standard input, instead of an "
           "event"}}}}},
      {"required", {"name"}},
      {"additionalProperties", false}};
  json list_output = {
      {"type", "object"},
      {"properties", {{"functions", {{"type", "array"}, {"items", {{"type", "object"}}}}}}},
      {"required", {"functions"}}};
  json empty_input = {{"type", "object"}, {"additionalProperties", false}};
  json list_annotations = {{"readOnlyHint", true}, {"openWorldHint", false}};
  // call_function's openWorldHint is true: a registered function's network is its spec's.
  return json::array(
      {Tool("run_python", "Run Python", kRunPythonDescription, RunInputSchema("Python"),
            ExecOutputSchema(), RunAnnotations(pools_networked_), with_output_schema),
       Tool("run_javascript", "Run JavaScript", kRunJavaScriptDescription,
            RunInputSchema("JavaScript (Node.js)"), ExecOutputSchema(),
            RunAnnotations(pools_networked_), with_output_schema),
       Tool("call_function", "Call a registered function", kCallFunctionDescription,
            call_input, ExecOutputSchema(), RunAnnotations(true), with_output_schema),
       Tool("list_functions", "List registered functions", kListFunctionsDescription,
            empty_input, list_output, list_annotations, with_output_schema)});
}

ToolResult SupervisorTools::Call(const std::string& name, const json& arguments) {
  if (name == "run_python") return RunCode(Language::kPython, arguments);
  if (name == "run_javascript") return RunCode(Language::kJavaScript, arguments);
  if (name == "call_function") return CallFunction(arguments);
  if (name == "list_functions") {
    if (std::string bad = CheckKeys(arguments, {}, {}); !bad.empty()) return BadArguments(bad);
    return ListFunctions();
  }
  ToolResult unknown;
  unknown.kind = ToolResult::Kind::kUnknownTool;
  return unknown;
}

ToolResult SupervisorTools::RunCode(Language language, const json& arguments) {
  if (std::string bad = CheckKeys(arguments, {"code", "event"}, {"code"}); !bad.empty()) {
    return BadArguments(bad);
  }
  if (!arguments["code"].is_string()) return BadArguments("\"code\" must be a string");
  const std::string code = arguments["code"].get<std::string>();
  const std::string script =
      language == Language::kPython ? WrapPythonCode(code) : WrapJavaScriptCode(code);
  const std::string event = arguments.contains("event") ? DumpLine(arguments["event"]) : "null";
  ApiClient client(socket_path_);
  // Twice at most: a pool the supervisor lost (restarted with another state dir, `zygo
  // down`) is registered again once.
  for (int attempt = 0;; ++attempt) {
    if (absl::Status ensured = pools_.Ensure(language); !ensured.ok()) {
      return NotRunToolResult(ensured);
    }
    absl::StatusOr<json> put =
        client.Call({"PUT", "/v1/scripts", script, "text/plain; charset=utf-8"});
    if (!put.ok()) return NotRunToolResult(put.status());
    std::string digest = put->value("digest", "");
    absl::StatusOr<json> reply = client.Call(
        {"POST",
         absl::StrCat("/v1/functions/", ApiClient::Escape(pools_.Name(language)),
                      "/exec?script=", ApiClient::Escape(digest)),
         event, "application/json"});
    if (reply.ok()) return ExecToolResult(*reply);
    if (absl::IsNotFound(reply.status()) && attempt == 0) {
      pools_.Forget(language);
      continue;
    }
    return NotRunToolResult(reply.status());
  }
}

ToolResult SupervisorTools::CallFunction(const json& arguments) {
  if (std::string bad = CheckKeys(arguments, {"name", "event", "stdin"}, {"name"});
      !bad.empty()) {
    return BadArguments(bad);
  }
  if (!arguments["name"].is_string() || arguments["name"].get<std::string>().empty()) {
    return BadArguments("\"name\" must be a function's name (a string)");
  }
  if (arguments.contains("stdin") && !arguments["stdin"].is_string()) {
    return BadArguments("\"stdin\" must be a string");
  }
  if (arguments.contains("stdin") && arguments.contains("event")) {
    return BadArguments("give \"event\" or \"stdin\", not both");
  }
  std::string path = absl::StrCat("/v1/functions/",
                                  ApiClient::Escape(arguments["name"].get<std::string>()), "/exec");
  sdk::ApiRequest request{"POST", path, "null", "application/json"};
  if (arguments.contains("event")) request.body = DumpLine(arguments["event"]);
  if (arguments.contains("stdin")) {
    request.body = arguments["stdin"].get<std::string>();
    request.content_type = "application/octet-stream";
  }
  ApiClient client(socket_path_);
  absl::StatusOr<json> reply = client.Call(request);
  if (!reply.ok()) return NotRunToolResult(reply.status());
  return ExecToolResult(*reply);
}

ToolResult SupervisorTools::ListFunctions() {
  ApiClient client(socket_path_);
  absl::StatusOr<json> reply = client.Call({"GET", "/v1/functions", "", ""});
  ToolResult tool;
  if (!reply.ok()) {
    tool.is_error = true;
    tool.text = absl::StrCat("cannot list the functions: ", reply.status().message());
    return tool;
  }
  json functions = json::array();
  if (auto all = reply->find("functions"); all != reply->end() && all->is_array()) {
    for (const json& function : *all) {
      if (!function.is_object()) continue;
      json entry = json::object();
      for (const char* key : {"name", "runtime", "pool", "entry", "image", "state", "error"}) {
        if (auto it = function.find(key); it != function.end()) entry[key] = *it;
      }
      functions.push_back(std::move(entry));
    }
  }
  tool.structured = {{"functions", std::move(functions)}};
  return tool;
}

}  // namespace zygo::cli::mcp
