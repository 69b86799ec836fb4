// `zygo up` of a function whose OCI image is not in the store, against a real supervisor
// and a real registry on 127.0.0.1 (testing/registry): the supervisor pulls it (over plain
// HTTP, the registry being on loopback), `zygo up` relays the pull's progress and answers
// once the function is warm; an image the registry does not have, or one absent with
// pull = "never", is a one-line refusal from `zygo up` (exit 125), not a function that
// fails every request.
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"
#include "testing/test_dir.h"

extern char** environ;

namespace zygo::testing {
namespace {

class UpPull : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = FreshTestDir("up-store-");
    specs_ = FreshTestDir("up-specs-");
    RunResult started = RunOnHost({Runfile("testing/registry/serve"), "anonymous"});
    ASSERT_EQ(started.exit_code, 0) << started.err;
    std::smatch match;
    if (std::regex_search(started.out, match, std::regex("DIR=([^ \\n]+)"))) {
      registry_dir_ = match[1];
    }
    ASSERT_TRUE(std::regex_search(started.out, match, std::regex("REGISTRY=([^ \\n]+)")))
        << started.out;
    registry_ = match[1];
    absl::StatusOr<TestImage> busybox = BuildTestImage("busybox");
    ASSERT_TRUE(busybox.ok()) << busybox.status();
    RunResult pushed = RunOnHost(
        {Runfile("testing/registry/push"), busybox->layout, registry_ + "/tools/busybox:1"});
    ASSERT_EQ(pushed.exit_code, 0) << pushed.err;

    SupervisorProcess::Options options;
    for (char** entry = environ; *entry != nullptr; ++entry) options.env.push_back(*entry);
    options.env.push_back("ZYGO_HOME=" + store_);
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> supervisor =
        SupervisorProcess::Start(options);
    ASSERT_TRUE(supervisor.ok()) << supervisor.status();
    supervisor_ = *std::move(supervisor);
  }

  void TearDown() override {
    supervisor_.reset();
    if (!registry_dir_.empty()) RunOnHost({Runfile("testing/registry/stop"), registry_dir_});
  }

  // Writes NAME.toml for a warm-exec function on `image` and runs `zygo up` on it.
  RunResult Up(const std::string& name, const std::string& image, const std::string& extra = "") {
    const std::string path = absl::StrCat(specs_, "/", name, ".toml");
    std::ofstream(path) << "name = \"" << name << "\"\nruntime = \"exec\"\nimage = \"" << image
                        << "\"\nentry = [\"/bin/sh\", \"-c\", \"echo hi from $(id -u)\"]\n"
                        << extra;
    return Zygo({"up", "--socket", supervisor_->http_socket(), path});
  }

  RunResult Zygo(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZygoPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.env = {"ZYGO_HOME=" + store_};
    options.want_outcome = false;
    return RunOnHost(argv, options);
  }

  std::string store_, specs_, registry_, registry_dir_;
  std::unique_ptr<SupervisorProcess> supervisor_;
};

TEST_F(UpPull, UpPullsAMissingImageShowsProgressAndAnswersOnceWarm) {
  const std::string image = registry_ + "/tools/busybox:1";
  // Control: the store starts without it.
  EXPECT_FALSE(absl::StrContains(Zygo({"images"}).out, "tools/busybox")) << store_;
  RunResult up = Up("pulled", image);
  ASSERT_EQ(up.exit_code, 0) << up.err << up.out;
  EXPECT_EQ(up.out, absl::StrCat("pulled is up (runtime exec, image ", image, ")\n"));
  EXPECT_TRUE(absl::StrContains(up.err, "sha256:")) << "the pull's progress: " << up.err;
  EXPECT_EQ(supervisor_->State("pulled"), "warm");
  RunResult ran = Zygo({"exec", "--socket", supervisor_->http_socket(), "pulled"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "hi from 0\n") << ran.err;
  EXPECT_TRUE(absl::StrContains(Zygo({"images"}).out, "tools/busybox")) << "now in the store";

  // In the store now: a second function on it warms without pulling.
  RunResult again = Up("again", image);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err, "") << "no pull the second time";
}

TEST_F(UpPull, AnImageThatCannotBePulledIsOneLineAndExit125) {
  // Control: the registry answers for the tag it has (the test above pulls it).
  RunResult absent = Up("absent", registry_ + "/tools/busybox:2");
  EXPECT_EQ(absent.exit_code, 125) << absent.out;
  EXPECT_TRUE(absl::StrContains(absent.err, "absent is registered but cannot warm")) << absent.err;
  EXPECT_TRUE(absl::StrContains(absent.err, "busybox:2")) << absent.err;
  EXPECT_EQ(LineCount(absent.err), 1) << absent.err;
  EXPECT_EQ(absent.out, "");

  RunResult never = Up("never", registry_ + "/tools/busybox:1", "pull = \"never\"\n");
  EXPECT_EQ(never.exit_code, 125) << never.out;
  EXPECT_TRUE(absl::StrContains(never.err, "is not in the store")) << never.err;
  EXPECT_TRUE(absl::StrContains(never.err, "pull = \"never\"")) << never.err;
  EXPECT_EQ(LineCount(never.err), 1) << never.err;

  RunResult bad = Up("bad", registry_ + "/tools/busybox:1", "pull = \"sometimes\"\n");
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(bad.err, "pull: \"sometimes\" is not a pull policy")) << bad.err;
}

}  // namespace
}  // namespace zygo::testing
