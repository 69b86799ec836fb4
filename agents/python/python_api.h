// The CPython C API as one table of function and data pointers, resolved with dlsym from the
// image's own libpython3.X.so.1.0 at start-up, so one binary serves any Python >= 3.9.
// Only stable-ABI symbols (Py_LIMITED_API=0x03090000): each member's type is the limited-API
// declaration itself, so naming a symbol outside that API does not compile.
#ifndef ZYGO_AGENTS_PYTHON_PYTHON_API_H_
#define ZYGO_AGENTS_PYTHON_PYTHON_API_H_

#include <Python.h>

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace zygo::agents::python {

// Every function the agent calls. X(name): `name` is both the symbol and the member.
#define ZYGO_PYTHON_FUNCTIONS(X)  \
  X(Py_InitializeEx)              \
  X(Py_IncRef)                    \
  X(Py_DecRef)                    \
  X(PyOS_BeforeFork)              \
  X(PyOS_AfterFork_Parent)        \
  X(PyOS_AfterFork_Child)         \
  X(PyImport_ImportModule)        \
  X(PyImport_GetModuleDict)       \
  X(PySys_GetObject)              \
  X(PyObject_GetAttrString)       \
  X(PyObject_SetAttrString)       \
  X(PyObject_SetItem)             \
  X(PyObject_DelItemString)       \
  X(PyObject_Str)                 \
  X(PyObject_Repr)                \
  X(PyObject_CallObject)          \
  X(PyObject_CallFunctionObjArgs) \
  X(PyCallable_Check)             \
  X(PyErr_Occurred)               \
  X(PyErr_Fetch)                  \
  X(PyErr_NormalizeException)     \
  X(PyErr_Clear)                  \
  X(PyException_SetTraceback)     \
  X(PyUnicode_FromStringAndSize)  \
  X(PyUnicode_FromString)         \
  X(PyUnicode_AsUTF8String)       \
  X(PyUnicode_AsEncodedString)    \
  X(PyUnicode_Join)               \
  X(PyBytes_AsStringAndSize)      \
  X(PyBytes_FromStringAndSize)    \
  X(PyLong_FromLongLong)          \
  X(PyLong_FromUnsignedLongLong)  \
  X(PyLong_FromString)            \
  X(PyNumber_Long)                \
  X(PyFloat_FromDouble)           \
  X(PyFloat_AsDouble)             \
  X(PyDict_New)                   \
  X(PyDict_SetItem)               \
  X(PyDict_SetItemString)         \
  X(PyDict_GetItemString)         \
  X(PyDict_Next)                  \
  X(PyList_New)                   \
  X(PyList_SetItem)               \
  X(PyList_Insert)                \
  X(PyList_Append)                \
  X(PyList_Size)                  \
  X(PyList_GetItem)               \
  X(PyTuple_Size)                 \
  X(PyTuple_GetItem)              \
  X(PyType_GetFlags)              \
  X(PyType_IsSubtype)             \
  X(Py_CompileString)             \
  X(PyEval_EvalCode)              \
  X(PyEval_GetBuiltins)           \
  X(PyModule_New)                 \
  X(PyModule_GetDict)             \
  X(PyObject_Malloc)

struct PythonApi {
#define ZYGO_PYTHON_MEMBER(name) decltype(&::name) name = nullptr;
  ZYGO_PYTHON_FUNCTIONS(ZYGO_PYTHON_MEMBER)
#undef ZYGO_PYTHON_MEMBER

  // Data symbols, read through their addresses (the limited API's Py_None, Py_True...
  // macros would take the address at link time, which this binary never has).
  PyObject* None() const { return none_struct; }
  PyObject* True() const { return true_struct; }
  PyObject* False() const { return false_struct; }
  PyObject* none_struct = nullptr;     // "_Py_NoneStruct"
  PyObject* true_struct = nullptr;     // "_Py_TrueStruct"
  PyObject* false_struct = nullptr;    // "_Py_FalseStruct"
  PyTypeObject* bool_type = nullptr;   // "PyBool_Type"
  PyTypeObject* float_type = nullptr;  // "PyFloat_Type"

  // The library the table was resolved from, for messages.
  std::string library_path;
};

// The libpython to load: $ZYGO_LIBPYTHON if set (must exist), else the highest
// libpython3.<minor>.so.1.0 with minor >= 9 in /usr/local/lib, /usr/lib/x86_64-linux-gnu,
// /usr/lib, /lib/x86_64-linux-gnu (first directory that has one wins a tie). kNotFound
// names what was searched. Needs nothing.
absl::StatusOr<std::string> FindLibpython();

// dlopens `path` RTLD_NOW|RTLD_GLOBAL (GLOBAL: C extension modules loaded later resolve
// their Py* symbols against it) and resolves every symbol in the table; a missing one is
// an error naming it. Never unloads. Call once, before any Python code runs.
absl::StatusOr<PythonApi> LoadPythonApi(const std::string& path);

// An owned reference (a new reference from the API), released with Py_DecRef. The
// limited-API Py_DECREF inline would need _Py_Dealloc at link time, so references are
// counted through the table's Py_IncRef/Py_DecRef instead.
class PyRef {
 public:
  PyRef() = default;
  PyRef(const PythonApi& api, PyObject* owned) : api_(&api), object_(owned) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyRef(PyRef&& other) noexcept
      : api_(other.api_), object_(std::exchange(other.object_, nullptr)) {}
  PyRef& operator=(PyRef&& other) noexcept {
    if (this != &other) {
      Reset();
      api_ = other.api_;
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  ~PyRef() { Reset(); }

  // Takes a new reference to a borrowed object.
  static PyRef Borrow(const PythonApi& api, PyObject* borrowed) {
    if (borrowed != nullptr) api.Py_IncRef(borrowed);
    return PyRef(api, borrowed);
  }

  PyObject* get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  // Hands the reference to a function that steals it (PyList_SetItem).
  PyObject* Release() { return std::exchange(object_, nullptr); }
  void Reset() {
    if (object_ != nullptr) api_->Py_DecRef(std::exchange(object_, nullptr));
  }

 private:
  const PythonApi* api_ = nullptr;
  PyObject* object_ = nullptr;
};

// Type tests through the table (the limited API's PyLong_Check & co. call PyType_GetFlags
// directly, a link-time reference).
bool IsInstanceByFlag(const PythonApi& api, PyObject* object, unsigned long flag);
bool IsFloat(const PythonApi& api, PyObject* object);
bool IsBool(const PythonApi& api, PyObject* object);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PYTHON_API_H_
