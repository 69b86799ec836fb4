// The two wrappers. The caller's code goes in as a JSON string literal, which is also a
// valid Python and JavaScript string literal when it is dumped without \u-escaping beyond
// control characters (nlohmann never writes "\/" and, with ensure_ascii off, no surrogate
// pairs), so no byte of the code can end the literal early.
#include "cli/mcp_scripts.h"

#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"

namespace zygo::cli::mcp {
namespace {

constexpr char kPythonWrapper[] = R"PY(# Written by `zygo mcp` for run_python (docs/mcp.md): runs CODE, below, per request.
import ast as _ast
import builtins as _builtins
import json as _json
import linecache as _linecache

CODE = @CODE@
_FILE = "<code>"
_RESULT = "__zygo_mcp_result__"
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect


def _plain(value):
    try:
        return _json.loads(_json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _await(value):
    import asyncio
    return asyncio.run(value)


def handler(event):
    # linecache lets the traceback show the lines of the code, which is in no file.
    _linecache.cache[_FILE] = (len(CODE), None, CODE.splitlines(True), _FILE)
    tree = _ast.parse(CODE, _FILE)
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        # The last expression's value, kept as a notebook cell shows it.
        last = tree.body[-1]
        target = _ast.Name(id=_RESULT, ctx=_ast.Store())
        tree.body[-1] = _ast.copy_location(_ast.Assign(targets=[target], value=last.value), last)
        _ast.fix_missing_locations(tree)
    scope = {"__name__": "__main__", "__builtins__": _builtins, "event": event, _RESULT: None}
    # A top-level await makes the module a coroutine, run here on one event loop.
    code = compile(tree, _FILE, "exec", flags=_ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    ran = eval(code, scope)
    if code.co_flags & _CO_COROUTINE:
        _await(ran)
    value = scope[_RESULT]
    user_handler = scope.get("handler")
    if callable(user_handler):
        value = user_handler(event)
    if hasattr(value, "__await__"):
        value = _await(value)
    return _plain(value)
)PY";

constexpr char kJavaScriptWrapper[] = R"JS(// Written by `zygo mcp` for run_javascript (docs/mcp.md): runs CODE, below, per request.
const vm = require('vm');
const util = require('util');

const CODE = @CODE@;
const FILE = 'code.js';

function plain(value) {
  if (value === undefined) return null;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? util.inspect(value) : JSON.parse(text);
  } catch (error) {
    return util.inspect(value);
  }
}

// The code as a script in this worker's global scope, or, when only an async function's
// body can hold it (a top-level await or return), as one; a syntax error of both is the
// script's own.
function compile() {
  try {
    return { script: new vm.Script(CODE, { filename: FILE }) };
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    try {
      const body = new vm.Script(
          `(async function (event, require, module, exports) {${CODE}\n})`, { filename: FILE });
      return { body: body.runInThisContext() };
    } catch (ignored) {
      throw error;
    }
  }
}

async function handler(event) {
  const userModule = { exports: {} };
  Object.assign(globalThis, { event, require, module: userModule, exports: userModule.exports });
  const compiled = compile();
  let value;
  if (compiled.script) {
    value = compiled.script.runInThisContext();
  } else {
    value = await compiled.body(event, require, userModule, userModule.exports);
  }
  let declared = vm.runInThisContext('typeof handler === "function" ? handler : undefined');
  if (declared === undefined) {
    const exported = userModule.exports;
    if (typeof exported === 'function') declared = exported;
    else if (exported && typeof exported.handler === 'function') declared = exported.handler;
  }
  if (declared !== undefined) value = declared(event);
  return plain(await value);
}
)JS";

std::string Literal(const std::string& code) {
  return nlohmann::json(code).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string WrapPythonCode(const std::string& code) {
  return absl::StrReplaceAll(kPythonWrapper, {{"@CODE@", Literal(code)}});
}

std::string WrapJavaScriptCode(const std::string& code) {
  return absl::StrReplaceAll(kJavaScriptWrapper, {{"@CODE@", Literal(code)}});
}

}  // namespace zygo::cli::mcp
