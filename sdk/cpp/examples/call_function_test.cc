// The example embedder (call_function.cc) against a real supervisor: it registers
// hello.toml, calls it, and prints what the handler printed and returned. Then the same
// program against a socket nobody serves: one clear line and a failing exit.
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"

namespace zygo::testing {
namespace {

TEST(CallFunctionExample, RegistersAndCallsHello) {
  SupervisorProcess::Options options;
  options.binary = Runfile("supervisor/supervisor");
  absl::StatusOr<std::unique_ptr<SupervisorProcess>> supervisor = SupervisorProcess::Start(options);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const std::string example = Runfile("sdk/cpp/examples/call_function");
  // Copies, not the runfiles' symlinks: the sandbox sees only what is in the code dir.
  const std::string spec = (*supervisor)->WorkDir() + "/hello.toml";
  for (const char* file : {"hello.toml", "hello.py"}) {
    std::filesystem::copy_file(Runfile(absl::StrCat("sdk/cpp/examples/hello/", file)),
                               absl::StrCat((*supervisor)->WorkDir(), "/", file));
  }
  RunOptions run;
  run.want_outcome = false;

  RunResult called = RunOnHost(
      {example, "--socket", (*supervisor)->http_socket(), spec, "hello", R"({"name": "Ada"})"},
      run);
  EXPECT_EQ(called.exit_code, 0) << called.err << (*supervisor)->LogTail();
  EXPECT_TRUE(absl::StrContains(called.out, "hello is up (python, image host)")) << called.out;
  EXPECT_TRUE(absl::StrContains(called.out, "saying hello to Ada\n")) << called.out;
  EXPECT_TRUE(absl::StrContains(called.out, R"(result {"greeting":"hello, Ada"})")) << called.out;

  RunResult unserved =
      RunOnHost({example, "--socket", (*supervisor)->dir() + "/nobody.sock", spec, "hello"}, run);
  EXPECT_EQ(unserved.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(unserved.err, "cannot reach the supervisor")) << unserved.err;
}

}  // namespace
}  // namespace zygo::testing
