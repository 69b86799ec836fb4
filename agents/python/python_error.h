// A raised Python exception as plain strings (type name, str(exc), formatted traceback),
// which is what the supervisor receives in a Failed frame or a start-up error line.
#ifndef ZYGO_AGENTS_PYTHON_PYTHON_ERROR_H_
#define ZYGO_AGENTS_PYTHON_PYTHON_ERROR_H_

#include <string>

#include "agents/python/python_api.h"

namespace zygo::agents::python {

struct PythonError {
  std::string type;       // The exception class's __name__, e.g. "ZeroDivisionError".
  std::string message;    // str(exception).
  std::string traceback;  // traceback.format_exception(...) joined; empty without a formatter.
};

// Takes (and clears) the pending exception. `format_exception` is traceback's
// format_exception, imported in the zygote so this path imports nothing; null skips the
// traceback. Never fails: whatever cannot be converted is left empty.
PythonError TakePythonError(const PythonApi& api, PyObject* format_exception);

// str(object) as UTF-8; lone surrogates come out backslash-escaped, so any object's text
// can be reported. Clears any error and returns "" if str() itself raises.
std::string StrOf(const PythonApi& api, PyObject* object);

// The UTF-8 bytes of a str object, strictly (lone surrogates are an error: false, with the
// Python exception left pending).
bool Utf8Of(const PythonApi& api, PyObject* str, std::string& out);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PYTHON_ERROR_H_
