// The libpython search and the dlsym table, against the host's own libpython.
#include "agents/python/python_api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace zygo::agents::python {
namespace {

// Sets or clears ZYGO_LIBPYTHON for one test and restores it afterwards.
class ScopedLibpythonEnv {
 public:
  explicit ScopedLibpythonEnv(const char* value) {
    if (const char* old = ::getenv("ZYGO_LIBPYTHON"); old != nullptr) {
      saved_ = old;
      had_ = true;
    }
    if (value != nullptr) {
      ::setenv("ZYGO_LIBPYTHON", value, 1);
    } else {
      ::unsetenv("ZYGO_LIBPYTHON");
    }
  }
  ~ScopedLibpythonEnv() {
    if (had_) {
      ::setenv("ZYGO_LIBPYTHON", saved_.c_str(), 1);
    } else {
      ::unsetenv("ZYGO_LIBPYTHON");
    }
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(PythonApiTest, SearchFindsTheHostLibpython) {
  ScopedLibpythonEnv env(nullptr);
  absl::StatusOr<std::string> found = FindLibpython();
  ASSERT_TRUE(found.ok()) << found.status();
  // Debian 12 ships 3.11 there; a newer one installed beside it would win, as intended.
  EXPECT_NE(found->find("/libpython3."), std::string::npos) << *found;
  EXPECT_NE(found->rfind(".so.1.0"), std::string::npos) << *found;
}

TEST(PythonApiTest, EnvironmentOverridesTheSearch) {
  ScopedLibpythonEnv missing("/nonexistent");
  absl::StatusOr<std::string> found = FindLibpython();
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("ZYGO_LIBPYTHON=/nonexistent"), absl::string_view::npos);
}

TEST(PythonApiTest, LoadResolvesEverySymbol) {
  ScopedLibpythonEnv env(nullptr);
  absl::StatusOr<PythonApi> api = LoadPythonApi(FindLibpython().value());
  ASSERT_TRUE(api.ok()) << api.status();
#define ZYGO_EXPECT_RESOLVED(name) EXPECT_NE(api->name, nullptr) << #name;
  ZYGO_PYTHON_FUNCTIONS(ZYGO_EXPECT_RESOLVED)
#undef ZYGO_EXPECT_RESOLVED
  EXPECT_NE(api->None(), nullptr);
  EXPECT_NE(api->True(), api->False());
  EXPECT_NE(api->bool_type, nullptr);
  EXPECT_NE(api->float_type, nullptr);
}

TEST(PythonApiTest, LoadRefusesWhatIsNotLibpython) {
  EXPECT_FALSE(LoadPythonApi("/nonexistent/libpython3.11.so.1.0").ok());
  // A real shared library without the Python symbols: the error names them.
  absl::StatusOr<PythonApi> libc = LoadPythonApi("libc.so.6");
  ASSERT_FALSE(libc.ok());
  EXPECT_NE(libc.status().message().find("Py_InitializeEx"), absl::string_view::npos)
      << libc.status();
}

}  // namespace
}  // namespace zygo::agents::python
