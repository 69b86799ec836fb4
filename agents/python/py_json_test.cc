// JSON <-> Python conversion, with a real interpreter from the host's libpython.
#include "agents/python/py_json.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "agents/python/interpreter.h"
#include "agents/python/python_api.h"
#include "agents/python/python_error.h"

namespace zygo::agents::python {
namespace {

class PyJsonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::string> library = FindLibpython();
    ASSERT_TRUE(library.ok()) << library.status();
    absl::StatusOr<PythonApi> api = LoadPythonApi(*library);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = new PythonApi(*api);
    absl::StatusOr<Interpreter> interpreter = Interpreter::Start(*api_);
    ASSERT_TRUE(interpreter.ok()) << interpreter.status();
    interpreter_ = new Interpreter(std::move(*interpreter));
  }

  // Evaluates a Python expression.
  PyRef Eval(const std::string& expression) {
    PyRef globals(*api_, api_->PyDict_New());
    api_->PyDict_SetItemString(globals.get(), "__builtins__", api_->PyEval_GetBuiltins());
    PyRef code(*api_, api_->Py_CompileString(expression.c_str(), "<test>", Py_eval_input));
    PyRef value(*api_,
                code ? api_->PyEval_EvalCode(code.get(), globals.get(), globals.get()) : nullptr);
    if (!value) ADD_FAILURE() << expression << ": " << TakePythonError(*api_, nullptr).message;
    return value;
  }

  std::string Repr(const PyRef& value) {
    PyRef repr(*api_, api_->PyObject_Repr(value.get()));
    return StrOf(*api_, repr.get());
  }

  // JSON text -> Python, as repr().
  std::string Parsed(const std::string& json) {
    absl::StatusOr<PyRef> value = JsonToPython(*api_, json);
    if (!value.ok()) return "<" + value.status().ToString() + ">";
    return Repr(*value);
  }

  absl::StatusOr<std::string> Encoded(const std::string& expression, size_t max = 1 << 20) {
    PyRef value = Eval(expression);
    if (!value) return absl::InternalError("eval failed");
    return PythonToJson(*api_, value.get(), max);
  }

  std::string EncodeError(const std::string& expression, size_t max = 1 << 20) {
    absl::StatusOr<std::string> json = Encoded(expression, max);
    EXPECT_FALSE(json.ok()) << expression << " -> " << *json;
    return json.ok() ? "" : std::string(json.status().message());
  }

  static inline PythonApi* api_ = nullptr;
  static inline Interpreter* interpreter_ = nullptr;
};

TEST_F(PyJsonTest, JsonBecomesTheRightPythonTypes) {
  EXPECT_EQ(Parsed(R"({"a": [1, -2, 3.5, "s", null, true, false], "b": {}})"),
            "{'a': [1, -2, 3.5, 's', None, True, False], 'b': {}}");
  EXPECT_EQ(Parsed(R"({"k": 1, "k": 2})"), "{'k': 2}");  // Last duplicate wins, as json.loads.
  EXPECT_EQ(Parsed("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(Parsed("18446744073709551616"), "18446744073709551616");  // 2**64: past uint64.
  EXPECT_EQ(Parsed("-123456789012345678901234567890"), "-123456789012345678901234567890");
  EXPECT_EQ(Parsed("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(Parsed("1.0"), "1.0");
  EXPECT_EQ(Parsed("1e2"), "100.0");
  const std::string digits300 = "1" + std::string(299, '0');  // Past 64 bits, within a double.
  EXPECT_EQ(Parsed(digits300), digits300);
  EXPECT_EQ(Parsed(R"("\u2603 \ud83d\ude00 \n")"), "'☃ 😀 \\n'");
}

TEST_F(PyJsonTest, BadJsonIsAnError) {
  for (const char* bad : {"", "{", "[1,]", "nan", "{'a': 1}", R"("\ud800")", "1 2", "\"\xff\""}) {
    absl::StatusOr<PyRef> value = JsonToPython(*api_, bad);
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // nlohmann refuses numbers that overflow a double (json.loads would give an int, or inf):
  // a documented limit, reported as bad input rather than rounded.
  for (const std::string& overflow : {std::string(400, '7'), std::string("1E400")}) {
    const absl::StatusOr<PyRef> value = JsonToPython(*api_, overflow);
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(value.status().message().find("number overflow"), absl::string_view::npos)
        << value.status();
  }
}

TEST_F(PyJsonTest, NestingIsBounded) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(JsonToPython(*api_, nested(kMaxJsonDepth)).ok());
  EXPECT_FALSE(JsonToPython(*api_, nested(kMaxJsonDepth + 1)).ok());
}

TEST_F(PyJsonTest, PythonBecomesCompactJson) {
  EXPECT_EQ(*Encoded(R"({"a": [1, 2.5, "x", None, True, False], "b": (1, 2), "c": {}})"),
            R"({"a":[1,2.5,"x",null,true,false],"b":[1,2],"c":{}})");
  EXPECT_EQ(*Encoded("2**100"), "1267650600228229401496703205376");
  EXPECT_EQ(*Encoded("-2**70"), "-1180591620717411303424");
  EXPECT_EQ(*Encoded("[1.0, 0.1, 1e300, -0.0]"), "[1.0,0.1,1e+300,-0.0]");
  EXPECT_EQ(*Encoded(R"("a\x00b\u2603\"\\\t")"), R"("a\u0000b☃\"\\\t")");
  // An IntEnum's str() is its name; JSON gets its value, as json.dumps writes it.
  EXPECT_EQ(*Encoded("__import__('enum').IntEnum('E', 'A B').B"), "2");
  EXPECT_EQ(*Encoded("type('D', (dict,), {})(k=[True])"), R"({"k":[true]})");
}

TEST_F(PyJsonTest, WhatJsonCannotCarryIsAnError) {
  EXPECT_NE(EncodeError("{1, 2}").find("Object of type set is not JSON serializable"),
            std::string::npos);
  EXPECT_NE(EncodeError("object()").find("object"), std::string::npos);
  EXPECT_NE(EncodeError("{1: 2}").find("dict keys must be str, not int"), std::string::npos);
  EXPECT_NE(EncodeError("float('nan')").find("nan"), std::string::npos);
  EXPECT_NE(EncodeError("[float('-inf')]").find("-inf"), std::string::npos);
  EXPECT_FALSE(EncodeError(R"("\ud800")").empty());  // A lone surrogate is not UTF-8.
  EXPECT_NE(EncodeError("(lambda l: (l.append(l), l)[1])([])").find("deeper"), std::string::npos);
  EXPECT_NE(EncodeError("'x' * 100", 50).find("larger than 50"), std::string::npos);
  EXPECT_TRUE(Encoded("'x' * 48", 50).ok());
}

}  // namespace
}  // namespace zygo::agents::python
