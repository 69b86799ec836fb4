// What a function spec could ask for to see the host, registered with a real supervisor:
// code = "/" (or a system directory, a symlink to either, the supervisor's own state or
// sockets) would bind the host's files read-only at /code; net.mode = "host" would share
// the host's network. Each is refused at `zygo up`, beside a control that registers and
// answers.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

using ::testing::HasSubstr;

// Reads a file of its code directory, or lists a directory of it.
constexpr char kHandler[] = R"(import os


def main(event):
    path = os.path.join('/code', event['path'])
    if os.path.isdir(path):
        return {'entries': sorted(os.listdir(path))}
    with open(path) as f:
        return {'content': f.read()}
)";

std::string PythonSpec(const std::string& name, const std::string& code) {
  return absl::StrCat("name = \"", name, "\"\nruntime = \"python\"\nentry = \"handler.py:main\"\n",
                      "code = \"", code, "\"\n");
}

class WarmSpecEscape : public WarmSuite {
 protected:
  void SetUp() override {
    WarmSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteFile("code/handler.py", kHandler);
    WriteFile("code/secret.txt", "the function's own file\n");
    std::filesystem::create_directory(dir_ + "/links");
    std::filesystem::create_symlink("/", dir_ + "/links/root");
    std::filesystem::create_symlink("/etc", dir_ + "/links/etc");
  }

  // The control: a function on its own code directory registers, and its handler reads
  // what is at /code.
  void ExpectAnOrdinaryCodeDirServes() {
    ASSERT_TRUE(Up("ordinary", PythonSpec("ordinary", ".")).ok()) << supervisor_->Log();
    absl::StatusOr<nlohmann::json> reply = supervisor_->Exec("ordinary", {{"path", "secret.txt"}});
    ASSERT_TRUE(reply.ok()) << reply.status() << supervisor_->Log();
    ASSERT_TRUE(reply->value("ok", false)) << reply->dump();
    EXPECT_EQ((*reply)["result"]["content"], "the function's own file\n");
  }
};

TEST_F(WarmSpecEscape, CodeThatWouldShowTheHostIsRefusedAtUp) {
  StartSupervisor();
  if (IsSkipped() || HasFatalFailure()) return;
  struct Attempt {
    std::string code;  // as written, relative to dir_/code
    std::string why;
  };
  const std::vector<Attempt> attempts = {
      {"/", "/ is the host's root directory"},
      {"/etc", "/etc is a system directory"},
      {"../links/root", "resolves to /; / is the host's root directory"},
      {"../links/etc", "resolves to /etc; /etc is a system directory"},
      {"/etc/default", "/etc/default lies inside /etc"},
      {"../state/functions", "lies inside the supervisor's state directory"},
      {"..", "is the supervisor's socket directory"},
  };
  int n = 0;
  for (const Attempt& attempt : attempts) {
    const std::string name = absl::StrCat("refused", n++);
    absl::Status up = Up(name, PythonSpec(name, attempt.code));
    EXPECT_EQ(up.code(), absl::StatusCode::kInvalidArgument) << attempt.code << ": " << up;
    EXPECT_THAT(up.message(),
                HasSubstr(absl::StrCat(name, ".toml:4: code: \"", attempt.code, "\": ")));
    EXPECT_THAT(up.message(), HasSubstr(attempt.why)) << attempt.code;
    EXPECT_EQ(supervisor_->State(name), "missing") << attempt.code;
  }
  ExpectAnOrdinaryCodeDirServes();
}

TEST_F(WarmSpecEscape, ZygoUpSaysWhyInOneLineAndExits125) {
  StartSupervisor();
  if (IsSkipped() || HasFatalFailure()) return;
  WriteFile("root.toml", PythonSpec("root", "links/root"));
  RunOptions options;
  options.want_outcome = false;
  RunResult up =
      RunOnHost({ZygoPath(), "up", "--socket", dir_ + "/http.sock", dir_ + "/root.toml"}, options);
  EXPECT_EQ(up.exit_code, 125) << up.out << up.err;
  EXPECT_EQ(LineCount(up.err), 1) << up.err;
  EXPECT_THAT(up.err, HasSubstr("root.toml:4: code: \"links/root\": resolves to /; / is the "
                                "host's root directory"));
  // Control: the same command with an ordinary code directory.
  WriteFile("ordinary.toml", PythonSpec("ordinary", "code"));
  up = RunOnHost({ZygoPath(), "up", "--socket", dir_ + "/http.sock", dir_ + "/ordinary.toml"},
                 options);
  EXPECT_EQ(up.exit_code, 0) << up.out << up.err;
}

TEST_F(WarmSpecEscape, CodeRootsConfineWhereCodeComesFrom) {
  std::filesystem::create_directories(dir_ + "/elsewhere");
  WriteFile("elsewhere/handler.py", kHandler);
  SupervisorProcess::Options options = SecurityTestSupervisor();
  options.args = {"--code-root", dir_ + "/code"};
  StartSupervisor(options);
  if (IsSkipped() || HasFatalFailure()) return;
  absl::Status up = Up("elsewhere", PythonSpec("elsewhere", "../elsewhere"));
  EXPECT_EQ(up.code(), absl::StatusCode::kInvalidArgument) << up;
  EXPECT_THAT(up.message(),
              HasSubstr(absl::StrCat(dir_,
                                     "/elsewhere is outside the directories code may come "
                                     "from (zygo serve --code-root ",
                                     dir_, "/code)")));
  ExpectAnOrdinaryCodeDirServes();
}

TEST_F(WarmSpecEscape, ABadCodeRootStopsTheSupervisorWithOneLine) {
  SupervisorProcess::Options options = SecurityTestSupervisor();
  options.dir = dir_;
  options.args = {"--code-root", "relative/dir"};
  absl::StatusOr<std::unique_ptr<SupervisorProcess>> started = SupervisorProcess::Start(options);
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.status().message(),
              HasSubstr("zygo serve: --code-root \"relative/dir\": needs an absolute path"));
}

// A function registered before its code was refused is not served after a restart.
TEST_F(WarmSpecEscape, AStoredSpecWithCodeAtTheRootIsNotServedAgain) {
  StartSupervisor();
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_TRUE(supervisor_->Stop().ok()) << supervisor_->Log();
  WriteFile("state/functions/old.toml", PythonSpec("old", "/"));
  WriteFile("state/functions/old.origin", absl::StrCat("old.toml\n", dir_, "/code\n"));
  StartSupervisor();
  if (HasFatalFailure()) return;
  EXPECT_EQ(supervisor_->State("old"), "missing");
  EXPECT_THAT(supervisor_->Log(),
              HasSubstr("old.toml: not loaded: old.toml:4: code: \"/\": / is the host's root"));
  ExpectAnOrdinaryCodeDirServes();
}

// Whoever can write beside a function's code directory swaps it for a symlink to / once
// it is registered: the next warm-up binds nothing of the host (a warm-exec function that
// lists /code would list the host's root).
TEST_F(WarmSpecEscape, ACodeDirectorySwappedForASymlinkIsNotBoundAgain) {
  StartSupervisor();
  if (IsSkipped() || HasFatalFailure()) return;
  std::filesystem::create_directory(dir_ + "/links/swap");
  WriteFile("links/swap/mine.txt", "");
  ASSERT_TRUE(Up("swapped",
                 "name = \"swapped\"\nruntime = \"exec\"\nentry = [\"/bin/ls\", "
                 "\"/code\"]\ncode = \"../links/swap\"\ncold_after = \"1s\"\n")
                  .ok());
  // Control: before the swap it lists its own directory.
  absl::StatusOr<nlohmann::json> reply = supervisor_->Exec("swapped", nullptr);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ((*reply)["stdout"], "mine.txt\n") << reply->dump();
  for (int i = 0; i < 100 && supervisor_->State("swapped") != "cold"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(supervisor_->State("swapped"), "cold");
  std::filesystem::rename(dir_ + "/links/swap", dir_ + "/links/swap-old");
  std::filesystem::create_symlink("/", dir_ + "/links/swap");

  reply = supervisor_->Exec("swapped", nullptr);
  ASSERT_FALSE(reply.ok()) << "warmed on the host's root: " << reply->dump();
  EXPECT_THAT(reply.status().message(), HasSubstr(absl::StrCat("its code directory ", dir_,
                                                               "/links/swap now resolves to /")));
}

TEST_F(WarmSpecEscape, TheHostsNetworkIsRefusedAtUp) {
  StartSupervisor();
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string head = PythonSpec("hostnet", ".");
  absl::Status up = Up("hostnet", head + "[net]\nmode = \"host\"\n");
  EXPECT_EQ(up.code(), absl::StatusCode::kInvalidArgument) << up;
  EXPECT_THAT(up.message(), HasSubstr("hostnet.toml:6: net.mode: \"host\" is refused: a warm "
                                      "function never shares the host's network; use \"egress\""));
  EXPECT_EQ(supervisor_->State("hostnet"), "missing");
  // Controls: egress with an allowlist registers; none registers and answers.
  up = Up("egress",
          PythonSpec("egress", ".") + "[net]\nmode = \"egress\"\nallow = [\"example.com:443\"]\n");
  EXPECT_TRUE(up.ok()) << up;
  EXPECT_NE(supervisor_->State("egress"), "missing");
  up = Up("none", PythonSpec("none", ".") + "[net]\nmode = \"none\"\n");
  ASSERT_TRUE(up.ok()) << up;
  absl::StatusOr<nlohmann::json> reply = supervisor_->Exec("none", {{"path", "secret.txt"}});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->value("ok", false)) << reply->dump();
}

}  // namespace
}  // namespace zygo::testing
