// Interpreter start-up and the Python-level chores around forks and requests.
#include "agents/python/interpreter.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace zygo::agents::python {
namespace {

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

}  // namespace

absl::StatusOr<Interpreter> Interpreter::Start(const PythonApi& api) {
  // Unbuffered stdio, as PYTHONUNBUFFERED=1 gives: what a request prints reaches its memfd
  // at once, so a request killed at its deadline keeps what it printed; and the zygote
  // never holds buffered output that a fork would copy into every child, which spares it
  // a flush per fork (measured: 20 of the zygote's 34 copy-on-write faults per fork).
  // Set for the interpreter's start only, unless the function's env sets it itself (an
  // empty value means unset to Python, so it is replaced for the start, then put back).
  const char* given = ::getenv("PYTHONUNBUFFERED");
  const bool was_unset = given == nullptr;
  const bool unbuffered_here = was_unset || *given == '\0';
  if (unbuffered_here) ::setenv("PYTHONUNBUFFERED", "1", 1);
  api.Py_InitializeEx(0);
  Interpreter interpreter(api);
  // traceback (and linecache, tokenize) now, so formatting an exception in a child
  // imports nothing and reads only the handler's source file.
  PyRef traceback(api, api.PyImport_ImportModule("traceback"));
  if (traceback) {
    interpreter.format_exception_ =
        PyRef(api, api.PyObject_GetAttrString(traceback.get(), "format_exception"));
  }
  if (!interpreter.format_exception_) return interpreter.StartupError("cannot import traceback");
  PyRef os(api, api.PyImport_ImportModule("os"));
  if (os) interpreter.os_environ_ = PyRef(api, api.PyObject_GetAttrString(os.get(), "environ"));
  if (!interpreter.os_environ_) return interpreter.StartupError("cannot import os");
  if (unbuffered_here) {
    // os.environ copied the environment during the start; changing it there changes the C
    // environment too.
    PyObject* environ = interpreter.os_environ_.get();
    int restored = -1;
    if (was_unset) {
      restored = api.PyObject_DelItemString(environ, "PYTHONUNBUFFERED");
    } else {
      PyRef key(api, api.PyUnicode_FromString("PYTHONUNBUFFERED"));
      PyRef empty(api, api.PyUnicode_FromString(""));
      if (key && empty) restored = api.PyObject_SetItem(environ, key.get(), empty.get());
    }
    if (restored != 0) {
      api.PyErr_Clear();
      if (was_unset)
        ::unsetenv("PYTHONUNBUFFERED");
      else
        ::setenv("PYTHONUNBUFFERED", "", 1);
    }
  }
  for (int i = 0; i < 2; ++i) {
    PyObject* stream = api.PySys_GetObject(i == 0 ? "__stdout__" : "__stderr__");  // Borrowed.
    if (stream != api.None()) interpreter.std_streams_[i] = PyRef::Borrow(api, stream);
  }
  PyRef marshal(api, api.PyImport_ImportModule("marshal"));
  if (marshal) {
    interpreter.marshal_dumps_ = PyRef(api, api.PyObject_GetAttrString(marshal.get(), "dumps"));
    interpreter.marshal_loads_ = PyRef(api, api.PyObject_GetAttrString(marshal.get(), "loads"));
  }
  if (!interpreter.marshal_dumps_ || !interpreter.marshal_loads_) {
    return interpreter.StartupError("cannot import marshal");
  }
  return interpreter;
}

absl::Status Interpreter::StartupError(const std::string& what) {
  const PythonError error = TakeError();
  std::string text = absl::StrCat(what, ": ", error.type, ": ", error.message);
  if (!error.traceback.empty()) absl::StrAppend(&text, "\n", error.traceback);
  return absl::FailedPreconditionError(absl::StripTrailingAsciiWhitespace(text));
}

absl::Status Interpreter::PrependSysPath(const std::string& dir) {
  PyObject* path = api_->PySys_GetObject("path");  // Borrowed.
  PyRef entry(*api_, api_->PyUnicode_FromString(dir.c_str()));
  if (path == nullptr || !entry || api_->PyList_Insert(path, 0, entry.get()) != 0) {
    return StartupError(absl::StrCat("cannot add ", dir, " to sys.path"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PyRef> Interpreter::ImportFunction(const std::string& file,
                                                  const std::string& function) {
  if (!absl::EndsWith(file, ".py") || ::access(file.c_str(), R_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("handler file ", file, " is not a readable .py file"));
  }
  const size_t slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
  const std::string name(absl::StripSuffix(file.substr(slash + 1), ".py"));
  if (absl::Status status = PrependSysPath(dir); !status.ok()) return status;
  PyRef module(*api_, api_->PyImport_ImportModule(name.c_str()));
  if (!module) return StartupError(absl::StrCat("cannot import ", file));
  // A name already in sys.modules (a handler called os.py) would silently be that module.
  PyRef loaded_from(*api_, api_->PyObject_GetAttrString(module.get(), "__file__"));
  if (!loaded_from) api_->PyErr_Clear();
  const std::string loaded = StrOf(*api_, loaded_from.get());
  if (RealPath(loaded) != RealPath(file)) {
    return absl::FailedPreconditionError(
        absl::StrCat("module name '", name, "' is already taken by ",
                     loaded.empty() ? "a built-in" : loaded, "; rename ", file));
  }
  PyRef callable(*api_, api_->PyObject_GetAttrString(module.get(), function.c_str()));
  if (!callable) {
    api_->PyErr_Clear();
    return absl::NotFoundError(absl::StrCat(file, " has no function '", function, "'"));
  }
  if (!api_->PyCallable_Check(callable.get())) {
    return absl::FailedPreconditionError(absl::StrCat(file, ":", function, " is not callable"));
  }
  return callable;
}

absl::Status Interpreter::ImportModules(const std::vector<std::string>& modules) {
  for (const std::string& name : modules) {
    PyRef module(*api_, api_->PyImport_ImportModule(name.c_str()));
    if (!module) return StartupError(absl::StrCat("cannot preload ", name));
  }
  return absl::OkStatus();
}

CallResult Interpreter::CompileScript(const std::string& code, const std::string& filename) {
  PyRef compiled(*api_, api_->Py_CompileString(code.c_str(), filename.c_str(), Py_file_input));
  if (!compiled) return TakeError();
  return compiled;
}

absl::StatusOr<std::string> Interpreter::DumpCode(PyObject* code) {
  PyRef bytes(*api_, api_->PyObject_CallFunctionObjArgs(marshal_dumps_.get(), code, nullptr));
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (!bytes || api_->PyBytes_AsStringAndSize(bytes.get(), &data, &size) != 0) {
    api_->PyErr_Clear();
    return absl::InternalError("marshal.dumps(code) failed");
  }
  return std::string(data, static_cast<size_t>(size));
}

CallResult Interpreter::LoadCode(const std::string& bytes) {
  PyRef data(*api_,
             api_->PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size())));
  if (!data) return TakeError();
  PyRef code(*api_, api_->PyObject_CallFunctionObjArgs(marshal_loads_.get(), data.get(), nullptr));
  if (!code) return TakeError();
  return code;
}

CallResult Interpreter::RunScript(PyObject* code, const std::string& filename) {
  const PythonApi& api = *api_;
  PyRef module(api, api.PyModule_New(std::string(absl::StripSuffix(filename, ".py")).c_str()));
  if (!module) return TakeError();
  PyObject* globals = api.PyModule_GetDict(module.get());  // Borrowed.
  PyRef file(api, api.PyUnicode_FromString(filename.c_str()));
  if (!file || api.PyDict_SetItemString(globals, "__builtins__", api.PyEval_GetBuiltins()) != 0 ||
      api.PyDict_SetItemString(globals, "__file__", file.get()) != 0) {
    return TakeError();
  }
  PyRef executed(api, api.PyEval_EvalCode(code, globals, globals));
  if (!executed) return TakeError();
  PyObject* handler = api.PyDict_GetItemString(globals, "handler");  // Borrowed.
  if (handler == nullptr || !api.PyCallable_Check(handler)) {
    return PythonError{"EntryError", absl::StrCat(filename, " defines no handler(event) function"),
                       ""};
  }
  return PyRef::Borrow(api, handler);
}

absl::Status Interpreter::FreezeHeap() {
  const PythonApi& api = *api_;
  PyRef gc(api, api.PyImport_ImportModule("gc"));
  if (!gc) return StartupError("cannot import gc");
  for (const char* step : {"collect", "freeze"}) {
    PyRef call(api, api.PyObject_GetAttrString(gc.get(), step));
    PyRef done(api, call ? api.PyObject_CallObject(call.get(), nullptr) : nullptr);
    if (!done) return StartupError(absl::StrCat("gc.", step, "() failed"));
  }
  return absl::OkStatus();
}

CallResult Interpreter::Call(PyObject* handler, PyObject* event) {
  PyRef result(*api_, api_->PyObject_CallFunctionObjArgs(handler, event, nullptr));
  if (!result) return TakeError();
  return result;
}

void Interpreter::FlushStdio() {
  for (int i = 0; i < 2; ++i) {
    PyObject* stream = api_->PySys_GetObject(i == 0 ? "stdout" : "stderr");  // Borrowed.
    if (stream == nullptr || stream == api_->None()) continue;
    // The interpreter's own stream, still writing through (a handler may have reconfigured
    // it): nothing is pending.
    if (stream == std_streams_[i].get()) {
      PyRef write_through(*api_, api_->PyObject_GetAttrString(stream, "write_through"));
      if (write_through.get() == api_->True()) continue;
      if (!write_through) api_->PyErr_Clear();
    }
    PyRef flush(*api_, api_->PyObject_GetAttrString(stream, "flush"));
    PyRef done(*api_, flush ? api_->PyObject_CallObject(flush.get(), nullptr) : nullptr);
    if (!done) api_->PyErr_Clear();
  }
}

absl::Status Interpreter::ReplaceEnvironment(const std::vector<std::string>& env) {
  const PythonApi& api = *api_;
  PyRef clear(api, api.PyObject_GetAttrString(os_environ_.get(), "clear"));
  PyRef cleared(api, clear ? api.PyObject_CallObject(clear.get(), nullptr) : nullptr);
  if (!cleared) return StartupError("os.environ.clear() failed");
  for (const std::string& entry : env) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos) continue;  // The wire refuses such entries.
    PyRef key(api, api.PyUnicode_FromString(entry.substr(0, equals).c_str()));
    PyRef value(api, api.PyUnicode_FromString(entry.c_str() + equals + 1));
    if (!key || !value || api.PyObject_SetItem(os_environ_.get(), key.get(), value.get()) != 0) {
      return StartupError(absl::StrCat("os.environ[", entry.substr(0, equals), "] failed"));
    }
  }
  return absl::OkStatus();
}

absl::Status Interpreter::PointTempDirAt(const std::string& dir) {
  const PythonApi& api = *api_;
  PyRef key(api, api.PyUnicode_FromString("TMPDIR"));
  PyRef value(api, api.PyUnicode_FromString(dir.c_str()));
  if (!key || !value || api.PyObject_SetItem(os_environ_.get(), key.get(), value.get()) != 0) {
    const PythonError error = TakeError();
    return absl::InternalError(
        absl::StrCat("os.environ['TMPDIR'] = ", dir, ": ", error.type, ": ", error.message));
  }
  // tempfile caches its choice in tempfile.tempdir on first use; None makes it look again.
  PyObject* tempfile = api.PyDict_GetItemString(api.PyImport_GetModuleDict(), "tempfile");
  if (tempfile != nullptr && api.PyObject_SetAttrString(tempfile, "tempdir", api.None()) != 0) {
    api.PyErr_Clear();
    return absl::InternalError("cannot reset tempfile.tempdir");
  }
  return absl::OkStatus();
}

}  // namespace zygo::agents::python
