// The embedded interpreter's life in the zygote: start it, import the handler (or the
// preload modules), and the few Python-level chores the zygote and its children need
// (flush stdio before a fork, point TMPDIR at the request's /tmp, format exceptions).
#ifndef ZYGO_AGENTS_PYTHON_INTERPRETER_H_
#define ZYGO_AGENTS_PYTHON_INTERPRETER_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/python/python_api.h"
#include "agents/python/python_error.h"

namespace zygo::agents::python {

// A handler call's outcome: the return value, or the exception it raised.
using CallResult = std::variant<PyRef, PythonError>;

class Interpreter {
 public:
  // Py_InitializeEx(0): Python installs no signal handlers, so SIGINT/SIGPIPE keep their
  // defaults and SIGCHLD stays ours. Then imports traceback (for the error path) and takes
  // os.environ. Zygote only; once per process.
  static absl::StatusOr<Interpreter> Start(const PythonApi& api);

  // Puts `dir` first on sys.path.
  absl::Status PrependSysPath(const std::string& dir);

  // Imports FILE as a module named after it (its directory first on sys.path) and returns
  // FILE's callable `function`. Errors carry one summary line, then the traceback.
  absl::StatusOr<PyRef> ImportFunction(const std::string& file, const std::string& function);

  // Imports each module (pool mode's --preload); errors as for ImportFunction.
  absl::Status ImportModules(const std::vector<std::string>& modules);

  // A pool script, child side, on the request path. CompileScript compiles `code` with
  // `filename` (for tracebacks) into a code object; DumpCode and LoadCode turn one into
  // marshal bytes and back (only ever read by this same interpreter build: marshal's format
  // is per Python version); RunScript runs a code object in a fresh module and returns its
  // callable handler. A SyntaxError, a module-level exception or a missing handler
  // ("EntryError") comes back as the PythonError.
  CallResult CompileScript(const std::string& code, const std::string& filename);
  absl::StatusOr<std::string> DumpCode(PyObject* code);
  CallResult LoadCode(const std::string& bytes);
  CallResult RunScript(PyObject* code, const std::string& filename);

  // The zygote's last step before it forks: gc.collect() then gc.freeze(), so a child's
  // collections skip the zygote's objects instead of writing to their headers and copying
  // the pages they sit on. Measured (16-import handler that builds 2,000 small dicts, so
  // the collector runs): 421-429 copy-on-write faults per request with it, 872-874 without.
  absl::Status FreezeHeap();

  // handler(event). Child side, on the request path.
  CallResult Call(PyObject* handler, PyObject* event);

  // Flushes sys.stdout and sys.stderr, ignoring errors: after the zygote's imports (or its
  // children would inherit and repeat buffered output) and before a child reports. Skips
  // the interpreter's own streams, which are unbuffered (Start): nothing can be pending in
  // them, and the flush calls were a dozen copy-on-write faults on a request's path.
  void FlushStdio();

  // os.environ becomes exactly `env` ("KEY=VALUE" each), and so does the C environment
  // (os.environ puts and unsets through). A function zygote forked by a runtime zygote
  // takes its function's environment this way. Zygote only.
  absl::Status ReplaceEnvironment(const std::vector<std::string>& env);

  // Sets TMPDIR in os.environ, which putenv()s it into the C environment too, and resets
  // tempfile's cached tempdir if tempfile is imported. Child side.
  absl::Status PointTempDirAt(const std::string& dir);

  // Takes the pending exception, with its traceback formatted.
  PythonError TakeError() { return TakePythonError(*api_, format_exception_.get()); }

  const PythonApi& api() const { return *api_; }

 private:
  explicit Interpreter(const PythonApi& api) : api_(&api) {}
  // The pending exception as a start-up error: summary line, then the traceback.
  absl::Status StartupError(const std::string& what);

  const PythonApi* api_;
  PyRef format_exception_;
  PyRef os_environ_;
  PyRef marshal_dumps_;
  PyRef marshal_loads_;
  PyRef std_streams_[2];  // sys.__stdout__, sys.__stderr__: unbuffered, never flushed
};

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_INTERPRETER_H_
