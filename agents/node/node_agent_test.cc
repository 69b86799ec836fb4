// zygo-agent-node's start-up failures: exit 125 before Hello, with one line saying why (the
// load error's stack after it). Its requests are covered by agents/conformance.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/conformance/agent_process.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "gtest/gtest.h"

namespace zygo::agents::node {
namespace {

using conformance::AgentCommand;
using conformance::AgentProcess;

class NodeStartupTest : public ::testing::Test {
 protected:
  // Runs the agent in function mode on a handler.js with `source`, with `args` after the
  // defaults and `path` as PATH; returns its wait status and stderr. No Hello may come.
  std::pair<int, std::string> RunToExit(const std::string& source,
                                        std::vector<std::string> args = {},
                                        const char* path = nullptr) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir =
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/node-startup-", ::getpid(), "-", ++instance_);
    EXPECT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::ofstream(dir + "/handler.js") << source;
    AgentCommand command{"agents/node/zygo-agent-node",
                         {"--fd", "3", "--entry", "handler.js:handle", "--code-dir", dir},
                         {},
                         {"NODE_OPTIONS"}};
    command.args.insert(command.args.end(), args.begin(), args.end());
    if (path != nullptr) command.set_env.push_back({"PATH", path});
    absl::StatusOr<std::unique_ptr<AgentProcess>> agent =
        AgentProcess::Start(command, dir + "/agent.stderr");
    EXPECT_TRUE(agent.ok()) << agent.status();
    if (!agent.ok()) return {-1, ""};
    EXPECT_FALSE((*agent)->Next(wire::MessageType::kHello, 0).ok());
    absl::StatusOr<int> wstatus = (*agent)->WaitExit(absl::Seconds(20));
    EXPECT_TRUE(wstatus.ok()) << wstatus.status();
    return {wstatus.value_or(-1), (*agent)->Stderr()};
  }

  static inline int instance_ = 0;
};

// The control: the same start with a handler that loads says Hello.
TEST_F(NodeStartupTest, AHandlerThatLoadsSaysHello) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/node-hello-", ::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::ofstream(dir + "/handler.js") << "exports.handle = (event) => event;\n";
  absl::StatusOr<std::unique_ptr<AgentProcess>> agent =
      AgentProcess::Start({"agents/node/zygo-agent-node",
                           {"--fd", "3", "--entry", "handler.js:handle", "--code-dir", dir},
                           {},
                           {}},
                          dir + "/agent.stderr");
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_TRUE((*agent)->Next(wire::MessageType::kHello, 0).ok()) << (*agent)->Stderr();
  (*agent)->HangUp();
  absl::StatusOr<int> wstatus = (*agent)->WaitExit(absl::Seconds(10));
  ASSERT_TRUE(wstatus.ok());
  EXPECT_TRUE(WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == 0) << *wstatus;
}

TEST_F(NodeStartupTest, AMissingFunctionIsExit125) {
  const auto [wstatus, stderr_text] = RunToExit("exports.other = () => 1;\n");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_EQ(stderr_text.rfind("zygo-agent-node: cannot load handler.js:handle: EntryError: "
                              "handler.js exports no function handle\n",
                              0),
            0u)
      << stderr_text;
}

TEST_F(NodeStartupTest, ASyntaxErrorIsExit125WithWhereItIs) {
  const auto [wstatus, stderr_text] = RunToExit("exports.handle = (event) => {\n  return (;\n};\n");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_NE(stderr_text.find("SyntaxError"), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find("handler.js:2"), std::string::npos) << stderr_text;
}

TEST_F(NodeStartupTest, AThrowAtLoadIsExit125WithItsStack) {
  const auto [wstatus, stderr_text] = RunToExit("throw new RangeError('not today');\n");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_NE(stderr_text.find("RangeError: not today"), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find("handler.js:1"), std::string::npos) << stderr_text;
}

TEST_F(NodeStartupTest, NoNodeOnThePathIsExit125NamingThePath) {
  const auto [wstatus, stderr_text] =
      RunToExit("exports.handle = (event) => event;\n", {}, "/nonexistent/bin:/also/not");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_EQ(stderr_text, "zygo-agent-node: no node on PATH (/nonexistent/bin:/also/not)\n");
}

TEST_F(NodeStartupTest, ANodeThatIsNotThereIsExit125) {
  const auto [wstatus, stderr_text] =
      RunToExit("exports.handle = (event) => event;\n", {"--node", "/nonexistent/node"});
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_EQ(stderr_text, "zygo-agent-node: --node /nonexistent/node is not executable\n");
}

// The snapshot's choices and its wall: the answer of one request on a started agent.
class NodeSnapshotTest : public ::testing::Test {
 protected:
  // Starts the agent on handler FILE (source `source`) with `args`; runs one request with
  // `event` and returns the handler's result (or "<Failed TYPE: MESSAGE>").
  std::string RunOnce(const std::string& file, const std::string& source,
                      std::vector<std::string> args, const std::string& event) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/node-snapshot-", ::getpid(), "-",
                        ++instance_);
    EXPECT_EQ(::mkdir(dir_.c_str(), 0755), 0);
    std::ofstream(dir_ + "/" + file) << source;
    AgentCommand command{"agents/node/zygo-agent-node",
                         {"--fd", "3", "--entry", file + ":handle", "--code-dir", dir_},
                         {},
                         {"NODE_OPTIONS"}};
    command.args.insert(command.args.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<AgentProcess>> agent =
        AgentProcess::Start(command, dir_ + "/agent.stderr");
    if (!agent.ok()) return agent.status().ToString();
    agent_ = *std::move(agent);
    if (!agent_->Next(wire::MessageType::kHello, 0).ok()) return "<no Hello> " + agent_->Stderr();
    absl::StatusOr<conformance::Spare> spare = agent_->Spawn(conformance::NextSpareId());
    if (!spare.ok()) return spare.status().ToString();
    wire::RunMessage run{1, file + ":handle", event, 10000, wire::FdLayout::kNone, ""};
    absl::StatusOr<wire::ReceivedFrame> reply = conformance::RunOn(*spare, run);
    if (!reply.ok()) return reply.status().ToString();
    if (absl::StatusOr<wire::DoneMessage> done = wire::DecodeDone(*reply); done.ok()) {
      return done->result;
    }
    absl::StatusOr<wire::FailedMessage> failed = wire::DecodeFailed(*reply);
    return failed.ok() ? absl::StrCat("<Failed ", failed->error_type, ": ", failed->message, ">")
                       : "<neither Done nor Failed>";
  }

  void TearDown() override {
    if (agent_ == nullptr) return;
    agent_->HangUp();
    EXPECT_TRUE(agent_->WaitExit(absl::Seconds(10)).ok());
  }

  std::string dir_;
  std::unique_ptr<AgentProcess> agent_;
  static inline int instance_ = 0;
};

// What the worker was started with, and an attempt to change the snapshot it started
// from through its fd 4 (a later worker of the same function starts from it too).
constexpr char kSnapshotProbe[] = R"js(const fs = require('fs');
exports.handle = () => {
  let write = 'no fd 4';
  try {
    fs.writeSync(fs.openSync('/proc/self/fd/4', 'r+'), 'x', 0);
    write = 'written';
  } catch (error) {
    write = error.code;
  }
  return { snapshot: process.execArgv.includes('--snapshot-blob'), write };
};
)js";

TEST_F(NodeSnapshotTest, AWorkerStartsFromASealedSnapshot) {
  EXPECT_EQ(RunOnce("probe.js", kSnapshotProbe, {"--snapshot", "on"}, "null"),
            R"({"snapshot":true,"write":"EPERM"})")
      << agent_->Stderr();
}

// The control: --snapshot off starts the same handler from worker.js's source, a sealed
// memfd at fd 4 as well.
TEST_F(NodeSnapshotTest, OffStartsFromTheSealedSource) {
  EXPECT_EQ(RunOnce("probe.js", kSnapshotProbe, {"--snapshot", "off"}, "null"),
            R"({"snapshot":false,"write":"EPERM"})")
      << agent_->Stderr();
}

// A snapshot cannot import() an ES module: an ES module handler's workers start from the
// source even when asked, and say why once.
TEST_F(NodeSnapshotTest, AnEsModuleHandlerStartsWithout) {
  EXPECT_EQ(
      RunOnce("probe.mjs",
              "export function handle() { return process.execArgv.includes('--snapshot-blob'); }\n",
              {"--snapshot", "on"}, "null"),
      "false");
  EXPECT_NE(agent_->Stderr().find("no snapshot for an ES module handler"), std::string::npos)
      << agent_->Stderr();
}

}  // namespace
}  // namespace zygo::agents::node
