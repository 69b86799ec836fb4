// Converting a pending Python exception into strings.
#include "agents/python/python_error.h"

namespace zygo::agents::python {
namespace {

// The bytes of a bytes object, or "" (clearing the error) when `bytes` is null.
std::string BytesValue(const PythonApi& api, const PyRef& bytes) {
  if (!bytes) {
    api.PyErr_Clear();
    return "";
  }
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (api.PyBytes_AsStringAndSize(bytes.get(), &data, &size) != 0) {
    api.PyErr_Clear();
    return "";
  }
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

std::string StrOf(const PythonApi& api, PyObject* object) {
  if (object == nullptr) return "";
  PyRef text(api, api.PyObject_Str(object));
  if (!text) {
    api.PyErr_Clear();
    return "";
  }
  return BytesValue(
      api, PyRef(api, api.PyUnicode_AsEncodedString(text.get(), "utf-8", "backslashreplace")));
}

bool Utf8Of(const PythonApi& api, PyObject* str, std::string& out) {
  PyRef bytes(api, api.PyUnicode_AsUTF8String(str));
  if (!bytes) return false;
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (api.PyBytes_AsStringAndSize(bytes.get(), &data, &size) != 0) return false;
  out.assign(data, static_cast<size_t>(size));
  return true;
}

PythonError TakePythonError(const PythonApi& api, PyObject* format_exception) {
  PyObject* raw_type = nullptr;
  PyObject* raw_value = nullptr;
  PyObject* raw_traceback = nullptr;
  api.PyErr_Fetch(&raw_type, &raw_value, &raw_traceback);
  if (raw_type == nullptr) return {"SystemError", "error return without an exception set", ""};
  api.PyErr_NormalizeException(&raw_type, &raw_value, &raw_traceback);
  PyRef type(api, raw_type);
  PyRef value(api, raw_value);
  PyRef traceback(api, raw_traceback);
  if (value && traceback) api.PyException_SetTraceback(value.get(), traceback.get());

  PythonError error;
  PyRef name(api, api.PyObject_GetAttrString(type.get(), "__name__"));
  error.type = name ? StrOf(api, name.get()) : "Exception";
  if (!name) api.PyErr_Clear();
  if (error.type.empty()) error.type = "Exception";
  error.message = StrOf(api, value.get());
  if (format_exception != nullptr) {
    // The three-argument form is the one every Python from 3.9 on accepts.
    PyRef lines(api, api.PyObject_CallFunctionObjArgs(
                         format_exception, type.get(), value ? value.get() : api.None(),
                         traceback ? traceback.get() : api.None(), nullptr));
    PyRef empty(api, api.PyUnicode_FromString(""));
    PyRef joined(api, lines && empty ? api.PyUnicode_Join(empty.get(), lines.get()) : nullptr);
    if (joined) {
      error.traceback = StrOf(api, joined.get());
    } else {
      api.PyErr_Clear();
    }
  }
  return error;
}

}  // namespace zygo::agents::python
