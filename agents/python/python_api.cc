// Finds the image's libpython and fills the PythonApi table from it with dlsym.
#include "agents/python/python_api.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace zygo::agents::python {
namespace {

// Where distributions and the official python images put the shared library. Debian's
// multiarch directory first among the /usr ones because that is where its packages go.
constexpr const char* kSearchDirs[] = {"/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib",
                                       "/lib/x86_64-linux-gnu"};
constexpr int kMinMinor = 9;

// The minor version of "libpython3.<minor>.so.1.0", or -1 for any other name (including
// the debug "d" and free-threaded "t" builds, which do not keep the stable ABI).
int MinorOf(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "libpython3.") || !absl::ConsumeSuffix(&name, ".so.1.0")) {
    return -1;
  }
  int minor = -1;
  if (name.empty() || name.size() > 3 || !absl::SimpleAtoi(name, &minor)) return -1;
  for (char c : name) {
    if (c < '0' || c > '9') return -1;
  }
  return minor;
}

}  // namespace

absl::StatusOr<std::string> FindLibpython() {
  if (const char* forced = std::getenv("ZYGO_LIBPYTHON"); forced != nullptr && *forced != '\0') {
    if (::access(forced, R_OK) != 0) {
      return absl::NotFoundError(
          absl::StrCat("ZYGO_LIBPYTHON=", forced, " is not a readable file"));
    }
    return std::string(forced);
  }
  int best_minor = -1;
  std::string best;
  for (const char* dir : kSearchDirs) {
    DIR* listing = ::opendir(dir);
    if (listing == nullptr) continue;
    while (const dirent* entry = ::readdir(listing)) {
      const int minor = MinorOf(entry->d_name);
      if (minor >= kMinMinor && minor > best_minor) {
        best_minor = minor;
        best = absl::StrCat(dir, "/", entry->d_name);
      }
    }
    ::closedir(listing);
  }
  if (best.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no shared libpython3.<minor>.so.1.0 with minor >= ", kMinMinor, " in ",
        absl::StrJoin(kSearchDirs, ", "),
        "; the image needs Python 3.9+ built with --enable-shared (or set ZYGO_LIBPYTHON)"));
  }
  return best;
}

absl::StatusOr<PythonApi> LoadPythonApi(const std::string& path) {
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("dlopen(", path, "): ", error != nullptr ? error : "unknown error"));
  }
  PythonApi api;
  api.library_path = path;
  std::vector<std::string> missing;
  auto resolve = [&](const char* name) -> void* {
    void* symbol = ::dlsym(library, name);
    if (symbol == nullptr) missing.push_back(name);
    return symbol;
  };
#define ZYGO_PYTHON_RESOLVE(name) api.name = reinterpret_cast<decltype(api.name)>(resolve(#name));
  ZYGO_PYTHON_FUNCTIONS(ZYGO_PYTHON_RESOLVE)
#undef ZYGO_PYTHON_RESOLVE
  api.none_struct = static_cast<PyObject*>(resolve("_Py_NoneStruct"));
  api.true_struct = static_cast<PyObject*>(resolve("_Py_TrueStruct"));
  api.false_struct = static_cast<PyObject*>(resolve("_Py_FalseStruct"));
  api.bool_type = static_cast<PyTypeObject*>(resolve("PyBool_Type"));
  api.float_type = static_cast<PyTypeObject*>(resolve("PyFloat_Type"));
  if (!missing.empty()) {
    // The handle stays open: a half-resolved libpython is useless but harmless, and the
    // caller exits on this error anyway.
    return absl::FailedPreconditionError(
        absl::StrCat(path, " lacks stable-ABI symbols: ", absl::StrJoin(missing, ", ")));
  }
  return api;
}

bool IsInstanceByFlag(const PythonApi& api, PyObject* object, unsigned long flag) {
  return (api.PyType_GetFlags(Py_TYPE(object)) & flag) != 0;
}

bool IsFloat(const PythonApi& api, PyObject* object) {
  return Py_TYPE(object) == api.float_type || api.PyType_IsSubtype(Py_TYPE(object), api.float_type);
}

bool IsBool(const PythonApi& api, PyObject* object) {
  // bool cannot be subclassed, so identity of the type is the whole test.
  return Py_TYPE(object) == api.bool_type;
}

}  // namespace zygo::agents::python
