// The Model Context Protocol side of `zygo mcp`: one JSON-RPC 2.0 message (a line of
// stdio) in, at most one reply out, per the MCP specification's legacy revisions
// (2024-11-05 .. 2025-11-25, an `initialize` handshake) and its modern one (2026-07-28,
// stateless: every request names its version in `_meta`). The tools themselves are behind
// McpTools, so this file knows no supervisor and is tested with a fake.
#ifndef ZYGO_CLI_MCP_SESSION_H_
#define ZYGO_CLI_MCP_SESSION_H_

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace zygo::cli::mcp {

// The revision every modern request must name, and the legacy ones `initialize` may agree
// on, newest first.
inline constexpr char kModernVersion[] = "2026-07-28";
const std::vector<std::string>& LegacyVersions();

// JSON-RPC and MCP error codes this server answers with.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kUnsupportedProtocolVersion = -32022;  // 2026-07-28

// What one tools/call came to, as the tool sees it.
struct ToolResult {
  enum class Kind {
    kDone,          // ran (or was refused by the supervisor): `structured` and `is_error`
    kUnknownTool,   // no tool of that name
    kBadArguments,  // the arguments do not fit the tool's inputSchema: `message` says how
  };
  Kind kind = Kind::kDone;
  nlohmann::json structured;  // the structuredContent; null for none
  std::string text;           // the text content block; "" means structured.dump()
  bool is_error = false;
  std::string message;
};

// The tools, as the session needs them. Call may be made from several threads at once.
class McpTools {
 public:
  virtual ~McpTools() = default;
  // The tools/list "tools" array. `with_output_schema` false leaves out outputSchema (and
  // title), which revisions before 2025-06-18 do not know.
  virtual nlohmann::json List(bool with_output_schema) const = 0;
  virtual ToolResult Call(const std::string& name, const nlohmann::json& arguments) = 0;
};

// A tools/call to run off the reading thread: Run() returns the reply line.
struct DeferredCall {
  nlohmann::json id;
  std::function<std::string()> run;
};

// One line's handling: an immediate reply line, a call to run later, or neither (a
// notification, a reply to us).
struct Step {
  std::optional<std::string> reply;
  std::optional<DeferredCall> deferred;
};

struct ServerInfo {
  std::string name = "zygo";
  std::string title = "Zygo sandboxes";
  std::string version;
  std::string instructions;
};

// One stdio connection's state: the legacy version `initialize` agreed on, if any.
// HandleLine is called from one thread; the DeferredCalls it returns may run on others.
class McpSession {
 public:
  McpSession(McpTools& tools, ServerInfo info);

  // Handles one line (without its newline). Never throws; input of any shape gets a reply
  // or, for a notification, none.
  Step HandleLine(absl::string_view line);

  // The reply to a deferred call that could not be started (`message` says why).
  std::string BusyReply(const nlohmann::json& id, const std::string& message) const;

  // Each DeferredCall's end, from any thread: false when the client cancelled it
  // (notifications/cancelled), whose reply must then not be sent.
  bool Finish(const nlohmann::json& id);

 private:
  struct Request;
  Step HandleMessage(const nlohmann::json& message);
  // Sets the revision `request` is served under; the error reply when it names one this
  // server does not speak.
  std::optional<std::string> SetVersion(Request& request) const;
  Step Dispatch(const Request& request);
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json Discover() const;
  Step ToolsCall(const Request& request);

  void Cancel(const nlohmann::json& params);

  McpTools& tools_;
  const ServerInfo info_;
  std::string legacy_version_;  // "" before initialize
  std::mutex calls_mu_;
  std::map<std::string, bool> calls_;  // the running tools/calls' ids (dumped) -> cancelled
};

// The reply line for `result` (an object) or for an error.
std::string ResultLine(const nlohmann::json& id, nlohmann::json result);
std::string ErrorLine(const nlohmann::json& id, int code, const std::string& message,
                      const nlohmann::json& data = nullptr);

// `value` as one line of JSON; invalid UTF-8 becomes U+FFFD instead of an exception.
std::string DumpLine(const nlohmann::json& value);

}  // namespace zygo::cli::mcp

#endif  // ZYGO_CLI_MCP_SESSION_H_
