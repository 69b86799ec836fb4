// JSON <-> Python: an nlohmann SAX handler that builds Python objects directly (no
// intermediate tree, and the raw text of over-64-bit integers), and a writer that walks
// Python objects.
#include "agents/python/py_json.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agents/python/python_error.h"
#include "nlohmann/json.hpp"

namespace zygo::agents::python {
namespace {

// Builds the event object as the parser reports values. Containers under construction
// live on `stack_`; a finished value goes into the innermost one (or becomes the root).
class PythonBuilder {
 public:
  explicit PythonBuilder(const PythonApi& api) : api_(api) {}

  bool null() { return Add(PyRef::Borrow(api_, api_.None())); }
  bool boolean(bool value) { return Add(PyRef::Borrow(api_, value ? api_.True() : api_.False())); }
  bool number_integer(int64_t value) { return Add(New(api_.PyLong_FromLongLong(value))); }
  bool number_unsigned(uint64_t value) { return Add(New(api_.PyLong_FromUnsignedLongLong(value))); }
  bool number_float(double value, const std::string& text) {
    // nlohmann falls back to a double for integers past 64 bits; the text keeps them exact.
    if (text.find_first_of(".eE") == std::string::npos) {
      return Add(New(api_.PyLong_FromString(text.c_str(), nullptr, 10)));
    }
    return Add(New(api_.PyFloat_FromDouble(value)));
  }
  bool string(std::string& value) { return Add(Str(value)); }
  bool binary(nlohmann::json::binary_t&) { return Fail("binary values are not JSON"); }
  bool start_object(size_t) { return Push(New(api_.PyDict_New()), true); }
  bool key(std::string& value) {
    stack_.back().key = Str(value);
    return static_cast<bool>(stack_.back().key) || PythonFailed();
  }
  bool end_object() { return Pop(); }
  bool start_array(size_t) { return Push(New(api_.PyList_New(0)), false); }
  bool end_array() { return Pop(); }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("event is not JSON (byte ", position, "): ", e.what()));
    }
    return false;
  }

  absl::StatusOr<PyRef> Finish() {
    if (!status_.ok()) return status_;
    if (!root_) return absl::InvalidArgumentError("event is not JSON: no value");
    return std::move(root_);
  }

 private:
  struct Level {
    PyRef container;
    bool is_dict = false;
    PyRef key;  // The dict key waiting for its value.
  };

  PyRef New(PyObject* owned) { return PyRef(api_, owned); }
  PyRef Str(const std::string& utf8) {
    return New(api_.PyUnicode_FromStringAndSize(utf8.data(), static_cast<Py_ssize_t>(utf8.size())));
  }

  bool Fail(absl::string_view why) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(absl::StrCat("event: ", why));
    return false;
  }
  // A Python call returned null: report its exception (e.g. the int digit limit).
  bool PythonFailed() {
    const PythonError error = TakePythonError(api_, nullptr);
    return Fail(absl::StrCat(error.type, ": ", error.message));
  }

  bool Add(PyRef value) {
    if (!value) return PythonFailed();
    if (stack_.empty()) {
      root_ = std::move(value);
      return true;
    }
    Level& level = stack_.back();
    const int rc = level.is_dict
                       ? api_.PyDict_SetItem(level.container.get(), level.key.get(), value.get())
                       : api_.PyList_Append(level.container.get(), value.get());
    level.key.Reset();
    return rc == 0 || PythonFailed();
  }

  bool Push(PyRef container, bool is_dict) {
    if (!container) return PythonFailed();
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      return Fail(absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels"));
    }
    stack_.push_back(Level{std::move(container), is_dict, PyRef()});
    return true;
  }

  bool Pop() {
    PyRef done = std::move(stack_.back().container);
    stack_.pop_back();
    return Add(std::move(done));
  }

  const PythonApi& api_;
  std::vector<Level> stack_;
  PyRef root_;
  absl::Status status_;
};

// Appends `utf8` as a JSON string. Only '"', '\\' and control characters need escapes;
// the rest of UTF-8 passes through (json.dumps(ensure_ascii=False)).
void AppendJsonString(absl::string_view utf8, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : utf8) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out.push_back(kHex[byte >> 4]);
          out.push_back(kHex[byte & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

class JsonWriter {
 public:
  JsonWriter(const PythonApi& api, size_t max_size) : api_(api), max_size_(max_size) {}

  absl::Status Write(PyObject* value, int depth) {
    if (out_.size() > max_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("result is larger than ", max_size_, " bytes"));
    }
    if (depth > kMaxJsonDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("result is nested deeper than ", kMaxJsonDepth, " levels (a cycle?)"));
    }
    if (value == api_.None()) return Append("null");
    if (IsBool(api_, value)) return Append(value == api_.True() ? "true" : "false");
    if (IsInstanceByFlag(api_, value, Py_TPFLAGS_LONG_SUBCLASS)) return WriteInt(value);
    if (IsFloat(api_, value)) return WriteFloat(value);
    if (IsInstanceByFlag(api_, value, Py_TPFLAGS_UNICODE_SUBCLASS)) return WriteStr(value);
    if (IsInstanceByFlag(api_, value, Py_TPFLAGS_DICT_SUBCLASS)) return WriteDict(value, depth);
    if (IsInstanceByFlag(api_, value, Py_TPFLAGS_LIST_SUBCLASS)) {
      return WriteSequence(value, depth, api_.PyList_Size, api_.PyList_GetItem);
    }
    if (IsInstanceByFlag(api_, value, Py_TPFLAGS_TUPLE_SUBCLASS)) {
      return WriteSequence(value, depth, api_.PyTuple_Size, api_.PyTuple_GetItem);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("Object of type ", TypeName(value), " is not JSON serializable"));
  }

  std::string Take() { return std::move(out_); }

 private:
  absl::Status Append(absl::string_view text) {
    out_.append(text.data(), text.size());
    return absl::OkStatus();
  }

  absl::Status PythonStatus(absl::string_view what) {
    const PythonError error = TakePythonError(api_, nullptr);
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", error.type, ": ", error.message));
  }

  std::string TypeName(PyObject* value) {
    PyRef name(
        api_, api_.PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(value)), "__name__"));
    if (!name) api_.PyErr_Clear();
    return name ? StrOf(api_, name.get()) : "?";
  }

  absl::Status WriteInt(PyObject* value) {
    // int(value) first: an int subclass (IntEnum) may override __str__, int's text may not.
    PyRef exact(api_, api_.PyNumber_Long(value));
    PyRef text(api_, exact ? api_.PyObject_Str(exact.get()) : nullptr);
    std::string digits;
    if (!text || !Utf8Of(api_, text.get(), digits)) return PythonStatus("int");
    return Append(digits);
  }

  absl::Status WriteFloat(PyObject* value) {
    const double number = api_.PyFloat_AsDouble(value);
    if (!std::isfinite(number)) {
      return absl::InvalidArgumentError(
          absl::StrCat("float ", StrOf(api_, value), " is not JSON compliant"));
    }
    // float.__repr__ is the shortest text that round-trips, as json.dumps writes it.
    PyRef exact(api_, api_.PyFloat_FromDouble(number));
    PyRef text(api_, exact ? api_.PyObject_Repr(exact.get()) : nullptr);
    std::string repr;
    if (!text || !Utf8Of(api_, text.get(), repr)) return PythonStatus("float");
    return Append(repr);
  }

  absl::Status WriteStr(PyObject* value) {
    std::string utf8;
    if (!Utf8Of(api_, value, utf8)) return PythonStatus("str");
    AppendJsonString(utf8, out_);
    return absl::OkStatus();
  }

  absl::Status WriteDict(PyObject* dict, int depth) {
    out_.push_back('{');
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* item = nullptr;
    bool first = true;
    while (api_.PyDict_Next(dict, &position, &key, &item)) {
      if (!IsInstanceByFlag(api_, key, Py_TPFLAGS_UNICODE_SUBCLASS)) {
        return absl::InvalidArgumentError(
            absl::StrCat("dict keys must be str, not ", TypeName(key)));
      }
      if (!first) out_.push_back(',');
      first = false;
      if (absl::Status status = WriteStr(key); !status.ok()) return status;
      out_.push_back(':');
      if (absl::Status status = Write(item, depth + 1); !status.ok()) return status;
    }
    out_.push_back('}');
    return absl::OkStatus();
  }

  template <typename SizeFn, typename GetFn>
  absl::Status WriteSequence(PyObject* sequence, int depth, SizeFn size, GetFn get) {
    out_.push_back('[');
    const Py_ssize_t count = size(sequence);
    for (Py_ssize_t i = 0; i < count; ++i) {
      if (i > 0) out_.push_back(',');
      if (absl::Status status = Write(get(sequence, i), depth + 1); !status.ok()) return status;
    }
    out_.push_back(']');
    return absl::OkStatus();
  }

  const PythonApi& api_;
  const size_t max_size_;
  std::string out_;
};

}  // namespace

absl::StatusOr<PyRef> JsonToPython(const PythonApi& api, absl::string_view json) {
  PythonBuilder builder(api);
  nlohmann::json::sax_parse(json.data(), json.data() + json.size(), &builder);
  return builder.Finish();
}

absl::StatusOr<std::string> PythonToJson(const PythonApi& api, PyObject* value, size_t max_size) {
  JsonWriter writer(api, max_size);
  if (absl::Status status = writer.Write(value, 0); !status.ok()) return status;
  std::string out = writer.Take();
  if (out.size() > max_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("result of ", out.size(), " bytes is larger than ", max_size));
  }
  return out;
}

}  // namespace zygo::agents::python
