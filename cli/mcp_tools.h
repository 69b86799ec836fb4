// The tools `zygo mcp` serves: run_python and run_javascript (code run as a runtime-pool
// script, in the warm pools of mcp_pools.h), call_function and list_functions, each a
// call to the supervisor's API.
#ifndef ZYGO_CLI_MCP_TOOLS_H_
#define ZYGO_CLI_MCP_TOOLS_H_

#include <string>

#include "absl/status/status.h"
#include "cli/mcp_pools.h"
#include "cli/mcp_session.h"
#include "nlohmann/json.hpp"

namespace zygo::cli::mcp {

class SupervisorTools : public McpTools {
 public:
  // `pools` must outlive this. `pools_networked`: the pools may reach more than loopback
  // (--net, or pools the operator named, whose network zygo mcp does not know).
  SupervisorTools(std::string socket_path, PoolKeeper& pools, bool pools_networked);

  nlohmann::json List(bool with_output_schema) const override;
  ToolResult Call(const std::string& name, const nlohmann::json& arguments) override;

 private:
  ToolResult RunCode(Language language, const nlohmann::json& arguments);
  ToolResult CallFunction(const nlohmann::json& arguments);
  ToolResult ListFunctions();

  const std::string socket_path_;
  PoolKeeper& pools_;
  const bool pools_networked_;
};

// The structured result of one exec reply of the API ({ok, result, error, stdout, ...}):
// those fields with `status` (the outcome's) at the top, without the timings.
ToolResult ExecToolResult(const nlohmann::json& reply);

// The structured result of a request that did not run: status "not_run", the error's type
// ("unavailable", "not_found", "invalid_argument", "too_many_requests", ...) and message.
ToolResult NotRunToolResult(const absl::Status& status);

}  // namespace zygo::cli::mcp

#endif  // ZYGO_CLI_MCP_TOOLS_H_
