// JSON-RPC framing, version negotiation and the method table of `zygo mcp`.
#include "cli/mcp_session.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zygo::cli::mcp {
namespace {

using nlohmann::json;

constexpr char kMetaVersion[] = "io.modelcontextprotocol/protocolVersion";
constexpr char kMetaServerInfo[] = "io.modelcontextprotocol/serverInfo";
// The newest legacy revision, which also decides how a request that came with neither an
// `initialize` nor a modern `_meta` is served.
constexpr char kNewestLegacy[] = "2025-11-25";
// From this revision on, arguments that do not fit a tool's inputSchema are a tool
// execution error (isError), so the model can correct them (SEP-1303); before it, a
// JSON-RPC error.
constexpr char kArgumentsAsToolErrors[] = "2025-11-25";
// structuredContent and outputSchema came in 2025-06-18.
constexpr char kStructuredSince[] = "2025-06-18";
// nlohmann's parser recurses per level; a line nested deeper than this is refused before
// it is parsed, so no input can exhaust the stack.
constexpr int kMaxDepth = 256;

bool NestedTooDeep(absl::string_view line) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

bool IsBlank(absl::string_view line) {
  return line.find_first_not_of(" \t\r\n") == absl::string_view::npos;
}

}  // namespace

const std::vector<std::string>& LegacyVersions() {
  static const std::vector<std::string> kVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                     "2024-11-05"};
  return kVersions;
}

std::string DumpLine(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ResultLine(const json& id, json result) {
  return DumpLine(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string ErrorLine(const json& id, int code, const std::string& message, const json& data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return DumpLine(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}});
}

// A request as parsed: its id, method, params (an object) and the revision it is served
// under, with `modern` set when it named 2026-07-28 in its _meta.
struct McpSession::Request {
  json id;
  std::string method;
  json params = json::object();
  std::string version;
  bool modern = false;
};

McpSession::McpSession(McpTools& tools, ServerInfo info) : tools_(tools), info_(std::move(info)) {}

std::string McpSession::BusyReply(const json& id, const std::string& message) const {
  return ErrorLine(id, kInternalError, message);
}

Step McpSession::HandleLine(absl::string_view line) {
  Step step;
  if (IsBlank(line)) return step;
  if (NestedTooDeep(line)) {
    step.reply = ErrorLine(nullptr, kParseError,
                           absl::StrCat("Parse error: nested deeper than ", kMaxDepth, " levels"));
    return step;
  }
  json message = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    step.reply = ErrorLine(nullptr, kParseError, "Parse error: the line is not JSON");
  } else if (message.is_array()) {
    step.reply = ErrorLine(nullptr, kInvalidRequest,
                           "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 "
                           "removed them); send one message per line");
  } else if (!message.is_object()) {
    step.reply = ErrorLine(nullptr, kInvalidRequest, "Invalid Request: not a JSON-RPC object");
  } else {
    return HandleMessage(message);
  }
  return step;
}

Step McpSession::HandleMessage(const json& message) {
  Step step;
  auto id = message.find("id");
  bool has_id = id != message.end();
  bool id_ok = has_id && (id->is_string() || id->is_number_integer());
  auto method = message.find("method");
  if (method == message.end() && has_id &&
      (message.contains("result") || message.contains("error"))) {
    return step;  // a reply to a request of ours: this server sends none
  }
  json reply_id = id_ok ? *id : json(nullptr);
  auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0" || method == message.end() ||
      !method->is_string() || (has_id && !id_ok)) {
    if (!has_id && method != message.end() && method->is_string()) return step;
    step.reply = ErrorLine(reply_id, kInvalidRequest,
                           "Invalid Request: needs \"jsonrpc\": \"2.0\", a string \"method\" and "
                           "a string or integer \"id\"");
    return step;
  }
  if (!has_id) {  // a notification (initialized, cancelled, ...): nothing to say
    if (*method == "notifications/cancelled") Cancel(message.value("params", json::object()));
    return step;
  }
  Request request;
  request.id = *id;
  request.method = method->get<std::string>();
  if (auto params = message.find("params"); params != message.end()) {
    if (!params->is_object()) {
      step.reply = ErrorLine(reply_id, kInvalidParams, "Invalid params: params must be an object");
      return step;
    }
    request.params = *params;
  }
  if (std::optional<std::string> refused = SetVersion(request); refused) {
    step.reply = std::move(refused);
    return step;
  }
  return Dispatch(request);
}

std::optional<std::string> McpSession::SetVersion(Request& request) const {
  request.version = legacy_version_.empty() ? kNewestLegacy : legacy_version_;
  auto meta = request.params.find("_meta");
  if (meta == request.params.end() || !meta->is_object() || !meta->contains(kMetaVersion)) {
    return std::nullopt;
  }
  const json& asked = meta->at(kMetaVersion);
  if (asked != kModernVersion) {
    json supported = json::array({kModernVersion});
    for (const std::string& legacy : LegacyVersions()) supported.push_back(legacy);
    return ErrorLine(request.id, kUnsupportedProtocolVersion, "Unsupported protocol version",
                     {{"supported", supported}, {"requested", asked}});
  }
  request.modern = true;
  request.version = kModernVersion;
  return std::nullopt;
}

Step McpSession::Dispatch(const Request& request) {
  Step step;
  json result;
  if (request.method == "tools/call") return ToolsCall(request);
  if (request.method == "initialize" && !request.modern) {
    result = Initialize(request.params);
  } else if (request.method == "server/discover") {
    result = Discover();
  } else if (request.method == "ping") {
    result = json::object();
  } else if (request.method == "tools/list") {
    result = {{"tools", tools_.List(request.version >= kStructuredSince)}};
    if (request.modern) {
      // The list never changes while this process runs.
      result["ttlMs"] = 3600000;
      result["cacheScope"] = "private";
    }
  } else {
    step.reply = ErrorLine(request.id, kMethodNotFound,
                           absl::StrCat("Method not found: ", request.method));
    return step;
  }
  if (request.modern) {
    result["resultType"] = "complete";
    result["_meta"][kMetaServerInfo] = {{"name", info_.name}, {"version", info_.version}};
  }
  step.reply = ResultLine(request.id, std::move(result));
  return step;
}

json McpSession::Initialize(const json& params) {
  std::string agreed = kNewestLegacy;
  if (auto asked = params.find("protocolVersion"); asked != params.end() && asked->is_string()) {
    for (const std::string& legacy : LegacyVersions()) {
      if (*asked == legacy) agreed = legacy;
    }
  }
  legacy_version_ = agreed;
  json server = {{"name", info_.name}, {"version", info_.version}};
  if (agreed >= kStructuredSince) server["title"] = info_.title;
  return {{"protocolVersion", agreed},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", server},
          {"instructions", info_.instructions}};
}

json McpSession::Discover() const {
  json supported = json::array({kModernVersion});
  for (const std::string& legacy : LegacyVersions()) supported.push_back(legacy);
  return {{"supportedVersions", supported},
          {"capabilities", {{"tools", json::object()}}},
          {"instructions", info_.instructions},
          {"ttlMs", 3600000},
          {"cacheScope", "private"}};
}

namespace {

// One tools/call as its thread needs it: copies, since the session reads on meanwhile.
struct ToolCall {
  json id;
  std::string tool;
  json arguments;
  bool arguments_as_tool_errors = false;
  bool structured = false;
  bool modern = false;
  json server_info;
};

std::string RunToolCall(McpTools& tools, const ToolCall& call) {
  ToolResult called = tools.Call(call.tool, call.arguments);
  if (called.kind == ToolResult::Kind::kUnknownTool) {
    return ErrorLine(call.id, kInvalidParams, absl::StrCat("Unknown tool: ", call.tool));
  }
  if (called.kind == ToolResult::Kind::kBadArguments) {
    std::string message = absl::StrCat("Invalid arguments for ", call.tool, ": ", called.message);
    if (!call.arguments_as_tool_errors) return ErrorLine(call.id, kInvalidParams, message);
    called.structured = nullptr;
    called.text = message;
    called.is_error = true;
  }
  json result = {{"isError", called.is_error}};
  std::string text = called.text.empty() ? DumpLine(called.structured) : called.text;
  result["content"] = json::array({{{"type", "text"}, {"text", text}}});
  if (call.structured && !called.structured.is_null()) {
    result["structuredContent"] = std::move(called.structured);
  }
  if (call.modern) {
    result["resultType"] = "complete";
    result["_meta"][kMetaServerInfo] = call.server_info;
  }
  return ResultLine(call.id, std::move(result));
}

}  // namespace

Step McpSession::ToolsCall(const Request& request) {
  Step step;
  auto name = request.params.find("name");
  if (name == request.params.end() || !name->is_string()) {
    step.reply = ErrorLine(request.id, kInvalidParams,
                           "Invalid params: tools/call needs a string \"name\"");
    return step;
  }
  ToolCall call;
  call.id = request.id;
  call.tool = name->get<std::string>();
  call.arguments = json::object();
  if (auto given = request.params.find("arguments"); given != request.params.end()) {
    if (!given->is_object() && !given->is_null()) {
      step.reply = ErrorLine(request.id, kInvalidParams,
                             "Invalid params: \"arguments\" must be an object");
      return step;
    }
    if (given->is_object()) call.arguments = *given;
  }
  call.arguments_as_tool_errors = request.version >= kArgumentsAsToolErrors;
  call.structured = request.version >= kStructuredSince;
  call.modern = request.modern;
  call.server_info = {{"name", info_.name}, {"version", info_.version}};
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    calls_[DumpLine(request.id)] = false;
  }
  McpTools* tools = &tools_;
  step.deferred = DeferredCall{request.id, [tools, call]() { return RunToolCall(*tools, call); }};
  return step;
}

bool McpSession::Finish(const json& id) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  auto call = calls_.find(DumpLine(id));
  if (call == calls_.end()) return true;
  bool cancelled = call->second;
  calls_.erase(call);
  return !cancelled;
}

// Only a running call is marked: the API has no way to stop a request, so the call runs
// to its end (or its timeout) and only its reply is held back, as the specification's
// cancellation asks ("SHOULD NOT send a response for the cancelled request").
void McpSession::Cancel(const json& params) {
  if (!params.is_object() || !params.contains("requestId")) return;
  std::lock_guard<std::mutex> lock(calls_mu_);
  auto call = calls_.find(DumpLine(params.at("requestId")));
  if (call != calls_.end()) call->second = true;
}

}  // namespace zygo::cli::mcp
