// The runtime-pool scripts `zygo mcp`'s run_python and run_javascript store: the caller's
// code, embedded in a small wrapper that defines the handler(event) a pool calls, so code
// with a handler of its own and plain code ("print(2 + 2)") both run. docs/mcp.md says
// what a caller sees; the wrappers run inside the sandbox, never in zygo.
#ifndef ZYGO_CLI_MCP_SCRIPTS_H_
#define ZYGO_CLI_MCP_SCRIPTS_H_

#include <string>

namespace zygo::cli::mcp {

// A Python pool script running `code`. Inside the sandbox, per request: `code` runs as a
// module named __main__ with `event` bound; if it defined a callable `handler`, the result
// is handler(event) (a coroutine is run to its end), else the value of its last statement
// when that is an expression, else None. A top-level `await` works (the code then runs on
// one asyncio event loop). A result JSON cannot carry (a set, NaN, an object) comes back
// as its repr(). Tracebacks name the code's own file "<code>".
std::string WrapPythonCode(const std::string& code);

// The JavaScript equivalent for a Node pool: `code` runs as a script in the worker's
// global scope with `event`, `require`, `module` and `exports` at hand; the result is its
// `handler(event)` (a function declaration, `exports.handler` or `module.exports`) when it
// defines one, else the value of its last expression statement (as a REPL shows it).
// Code with a top-level `await` or `return` runs as the body of an async function
// instead, whose return value is the result. Promises are awaited; a value JSON cannot
// carry comes back as util.inspect's text. Stacks name the code's file "code.js".
std::string WrapJavaScriptCode(const std::string& code);

}  // namespace zygo::cli::mcp

#endif  // ZYGO_CLI_MCP_SCRIPTS_H_
