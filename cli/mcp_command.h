// `zygo mcp`: a Model Context Protocol server on stdio whose tools run code in the
// supervisor's warm runtime pools (docs/mcp.md).
#ifndef ZYGO_CLI_MCP_COMMAND_H_
#define ZYGO_CLI_MCP_COMMAND_H_

namespace zygo::cli {

// Takes the arguments after `mcp`; serves until stdin ends. Returns 0 then, 125 for bad
// flags. Writes only MCP messages to stdout; its own lines go to stderr.
int McpCommand(int argc, char** argv);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_MCP_COMMAND_H_
