// JSON text <-> Python objects through the C API, so the request path never imports the
// json module: the event arrives as JSON text and becomes dict/list/str/int/float/bool/None;
// the handler's return value goes back as JSON text.
#ifndef ZYGO_AGENTS_PYTHON_PY_JSON_H_
#define ZYGO_AGENTS_PYTHON_PY_JSON_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agents/python/python_api.h"

namespace zygo::agents::python {

// Objects and arrays nested deeper than this are refused both ways, as json.loads and
// json.dumps would hit Python's recursion limit (a cycle in a result ends here too).
inline constexpr int kMaxJsonDepth = 1000;

// Parses `json` (strict RFC 8259, UTF-8) into a new Python object. Integers stay exact
// (those beyond 64 bits go through PyLong_FromString); duplicate keys keep the last value,
// as json.loads does. Unlike json.loads, a number that overflows a double (an integer of
// 309+ digits, 1e400) is refused: nlohmann's parser stops there. InvalidArgument says what
// and where on bad input.
absl::StatusOr<PyRef> JsonToPython(const PythonApi& api, absl::string_view json);

// Encodes `value` as compact JSON text (UTF-8, not ASCII-escaped): dict with str keys,
// list, tuple, str, int of any size, finite float, bool, None. Anything else, NaN/inf, a
// non-str key, nesting past kMaxJsonDepth or output past `max_size` bytes is an
// InvalidArgument naming the offending type or value. Runs no user code beyond an int
// subclass's __int__.
absl::StatusOr<std::string> PythonToJson(const PythonApi& api, PyObject* value, size_t max_size);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PY_JSON_H_
