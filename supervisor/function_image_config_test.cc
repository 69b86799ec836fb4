// One composition (runtime/sandbox_recipe.h): a function and `zygo run` on the same OCI
// image get the image's config the same way. busybox-multilayer (tools/images) sets every
// field: Env (PATH, FOO=bar), WorkingDir /work, User 1000:1000, Entrypoint ["/bin/sh",
// "-c"]. The command below is a shell script only through that Entrypoint.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "supervisor/service_fixture.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

using ::testing::Contains;

constexpr char kImage[] = "multilayer:test";
constexpr char kScript[] = "echo cwd=$(pwd); echo uid=$(id -u) gid=$(id -g); env";

// The report's lines, sorted, without TMPDIR: a warm request's is /tmp, its own tmpfs,
// which a one-shot run does not set.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "TMPDIR=")) lines.emplace_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

class FunctionImageConfigTest : public ServiceFixture {};

TEST_F(FunctionImageConfigTest, FunctionAndRunSeeTheSameDirectoryEnvironmentAndUser) {
  UseOwnImageStore();
  LoadTestImage("busybox-multilayer", kImage);

  testing::RunOptions options;
  options.env = {"ZYGO_HOME=" + image_store_};
  options.want_outcome = false;
  testing::RunResult run =
      testing::RunOnHost({testing::ZygoPath(), "run", kImage, kScript}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> by_run = Lines(run.out);
  // The control: each of the config's fields took effect in `zygo run`, so the same
  // lines from the function below show it took them too (not the defaults: /, 0:0).
  EXPECT_THAT(by_run, Contains("cwd=/work"));
  EXPECT_THAT(by_run, Contains("uid=1000 gid=1000"));
  EXPECT_THAT(by_run, Contains("FOO=bar"));
  EXPECT_THAT(by_run, Contains("PATH=/bin"));

  Up(absl::StrCat("name = \"config\"\nruntime = \"exec\"\nimage = \"", kImage, "\"\nentry = [\"",
                  kScript, "\"]\n[limits]\ntimeout = \"10s\"\n"));
  ExecReply reply = Call("config");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  ASSERT_TRUE(reply.ok) << reply.stderr_data;
  EXPECT_EQ(Lines(reply.stdout_data), by_run) << "zygo run printed:\n"
                                              << run.out << "the function printed:\n"
                                              << reply.stdout_data;
}

}  // namespace
}  // namespace zygo::supervisor
