// zygo-agent-exec as a plain subprocess on a zygote channel (agents/conformance's
// AgentProcess): each spare has its own /tmp (TMPDIR=/tmp), empty and unseen by any other,
// and its own Landlock domain; an unisolated spare never runs the command. The command is `sh -c
// 'eval "$(cat)"'`: each Run's stdin is its script.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/conformance/agent_process.h"
#include "agents/isolation/isolation.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"
#include "agents/wire/messages.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::exec {
namespace {

using base::UniqueFd;
using conformance::AgentProcess;
using conformance::Spare;
using isolation::LandlockAbi;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

UniqueFd Memfd(const std::string& contents) {
  UniqueFd fd(::memfd_create("exec-agent-test", MFD_CLOEXEC));
  if (fd.valid() && !contents.empty()) {
    EXPECT_EQ(::pwrite(fd.get(), contents.data(), contents.size(), 0),
              static_cast<ssize_t>(contents.size()));
  }
  return fd;
}

std::string ReadBack(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  for (off_t at = 0; (n = ::pread(fd, buffer, sizeof(buffer), at)) > 0; at += n) {
    text.append(buffer, n);
  }
  return text;
}

struct Ran {
  std::string reply;  // "exec'd" (the channel closed at exec), or what the spare sent
  int exit_code = -1;
  std::string out;
  std::string err;
};

class ExecAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/exec-agent-", ::getpid(), "-", ++count_);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_;
    absl::StatusOr<std::unique_ptr<AgentProcess>> agent = AgentProcess::Start(
        {"agents/exec/zygo-agent-exec", {"--fd", "3", "--", "/bin/sh", "-c", "eval \"$(cat)\""}},
        dir_ + "/agent.stderr");
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
    absl::StatusOr<wire::ReceivedFrame> hello = agent_->Next(wire::MessageType::kHello, 0);
    ASSERT_TRUE(hello.ok()) << hello.status() << "\nstderr: " << agent_->Stderr();
    EXPECT_EQ(wire::DecodeHello(*hello)->agent_kind, "exec");
  }

  // As a supervisor retiring the zygote: it reaps its spares before the agent object
  // SIGKILLs.
  void TearDown() override {
    if (agent_ == nullptr) return;
    agent_->HangUp();
    EXPECT_TRUE(agent_->WaitExit(absl::Seconds(10)).ok());
  }

  // A spare that answered Ping: it is isolated (unless not `isolate`) and waiting for its
  // request.
  Spare SpawnWaiting(uint64_t id = conformance::NextSpareId(), bool isolate = true) {
    absl::StatusOr<Spare> spare = agent_->Spawn(id, isolate);
    EXPECT_TRUE(spare.ok()) << spare.status() << "\nstderr: " << agent_->Stderr();
    if (!spare.ok()) return Spare{};
    EXPECT_TRUE(
        wire::SendFrame(spare->channel.get(), *wire::Encode(wire::PingMessage{id}), {}).ok());
    absl::StatusOr<wire::ReceivedFrame> pong =
        wire::ReceiveFrame(spare->channel.get(), conformance::kFrameTimeout);
    EXPECT_TRUE(pong.ok() && pong->frame.type == wire::MessageType::kPong) << pong.status();
    return std::move(*spare);
  }

  // Runs `script` (the command's stdin) on `spare` and waits for its reap. With an
  // `event`, the Run carries it in an event memfd after the stdio fds (wire v6).
  Ran RunScript(Spare& spare, const std::string& script, const std::string& event = "") {
    static uint64_t request_id = 0;
    UniqueFd in = Memfd(script), out = Memfd(""), err = Memfd(""), event_fd;
    wire::RunMessage run{++request_id, "exec", "", 10000, wire::FdLayout::kStdio, ""};
    std::vector<int> fds = {in.get(), out.get(), err.get()};
    if (!event.empty()) {
      absl::StatusOr<UniqueFd> sealed = wire::MakeEventMemfd(event);
      EXPECT_TRUE(sealed.ok()) << sealed.status();
      if (sealed.ok()) event_fd = *std::move(sealed);
      run.event_fd_size = event.size();
      fds.push_back(event_fd.get());
    }
    Ran ran;
    absl::StatusOr<wire::ReceivedFrame> reply = conformance::RunOn(spare, run, fds);
    if (wire::IsPeerClosed(reply.status())) {
      ran.reply = "exec'd";
    } else if (reply.ok()) {
      absl::StatusOr<wire::FailedMessage> failed = wire::DecodeFailed(*reply);
      ran.reply = failed.ok() ? absl::StrCat(failed->error_type, ": ", failed->message)
                              : std::string(wire::MessageTypeName(reply->frame.type));
    } else {
      ran.reply = reply.status().ToString();
    }
    absl::StatusOr<wire::DoneMessage> reaped = agent_->Reaped(spare.id);
    EXPECT_TRUE(reaped.ok()) << reaped.status();
    if (reaped.ok() && reaped->exit_kind == wire::ExitKind::kExited) {
      ran.exit_code = static_cast<int>(reaped->exit_code);
    }
    ran.out = ReadBack(out.get());
    ran.err = ReadBack(err.get());
    return ran;
  }

  std::string dir_;
  std::unique_ptr<AgentProcess> agent_;
  static inline int count_ = 0;
};

// Two spares alive at once: what the first leaves in /tmp (files, a directory, a symlink
// out of it) the second never sees, nor does the host's /tmp; the link's target stays.
TEST_F(ExecAgentTest, EachRequestHasItsOwnEmptyTmp) {
  Spare first = SpawnWaiting();
  Spare second = SpawnWaiting();
  const std::string victim = dir_ + "/victim";
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  std::ofstream(victim + "/keep") << "keep";
  const std::string mine = absl::StrCat("zygo-exec-test-", first.id);
  Ran ran = RunScript(first, absl::StrCat(R"(printf '%s|' "$TMPDIR"; ls -A /tmp; cd /tmp &&
      mkdir -p )",
                                          mine, "/b && echo x > ", mine, "/b/file && ln -s ",
                                          victim, " link && echo left"));
  EXPECT_EQ(ran.reply, "exec'd");
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "/tmp|left\n") << ran.err;
  ran = RunScript(second, R"(printf '%s|' "$TMPDIR"; ls -A /tmp; echo end)");
  EXPECT_EQ(ran.out, "/tmp|end\n") << ran.err;
  EXPECT_FALSE(Exists("/tmp/" + mine)) << "reached the host's /tmp";
  EXPECT_TRUE(Exists(victim + "/keep"));
}

// Nothing of the zygote's (its O_PATH fds of "/", its channels) reaches the command: `ls`
// lists only its stdio and the directory it reads.
TEST_F(ExecAgentTest, TheCommandHoldsOnlyItsStdio) {
  Spare spare = SpawnWaiting();
  Ran ran = RunScript(spare, "ls /proc/self/fd | tr '\\n' ' '");
  EXPECT_EQ(ran.out, "0 1 2 3 ") << ran.err;
  // A Run whose event came in a memfd (v6: a command's input is its stdin, but the agent
  // takes any Run) still runs the command, and the memfd closes at the exec.
  Spare with_event = SpawnWaiting();
  ran = RunScript(with_event, "ls /proc/self/fd | tr '\\n' ' '", std::string(200 << 10, 'e'));
  EXPECT_EQ(ran.reply, "exec'd");
  EXPECT_EQ(ran.out, "0 1 2 3 ") << ran.err;
}

TEST_F(ExecAgentTest, ARequestWritesOnlyBeneathItsTmp) {
  if (LandlockAbi() < 1) GTEST_SKIP() << "the kernel has no Landlock";
  Spare spare = SpawnWaiting();
  // Allow control: the same write into its own /tmp. The test's dir is writable for this
  // process, not for a request.
  const std::string outside = dir_ + "/intruder";
  Ran ran = RunScript(spare, absl::StrCat(R"(echo x > /tmp/inside && echo inside written
      echo x > )",
                                          outside, " || echo outside refused"));
  EXPECT_EQ(ran.out, "inside written\noutside refused\n") << ran.err;
  EXPECT_NE(ran.err.find("Permission denied"), std::string::npos) << ran.err;
  EXPECT_FALSE(Exists(outside));
}

TEST_F(ExecAgentTest, ARequestCannotSignalItsZygoteOrASibling) {
  if (LandlockAbi() < 6) {
    GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << " < 6 has no signal scoping";
  }
  Spare sibling = SpawnWaiting();
  Spare spare = SpawnWaiting();
  // $PPID is the zygote: the spare exec'd the shell. Signal 0 only asks; the control is
  // the request signalling itself.
  Ran ran = RunScript(
      spare, absl::StrCat("kill -0 $PPID && echo zygote signalled\n", "kill -0 ", sibling.pid,
                          " && echo sibling signalled\n", "kill -0 $$ && echo itself signalled"));
  EXPECT_EQ(ran.out, "itself signalled\n") << ran.err;
  EXPECT_EQ(::kill(sibling.pid, 0), 0) << "the sibling is alive: the refusal was not ESRCH";
  EXPECT_EQ(::kill(agent_->pid(), 0), 0);
}

// A spare never sent Isolate is not isolated: its Run is answered SetupError and the
// command never runs. The control: an isolated spare runs the same script.
TEST_F(ExecAgentTest, AnUnisolatedSpareNeverRunsTheCommand) {
  Spare isolated = SpawnWaiting();
  EXPECT_EQ(RunScript(isolated, "echo ran").out, "ran\n");
  Spare spare = SpawnWaiting(conformance::NextSpareId(), /*isolate=*/false);
  Ran ran = RunScript(spare, "echo ran");
  EXPECT_EQ(ran.reply.rfind("SetupError: ", 0), 0u) << ran.reply;
  EXPECT_NE(ran.reply.find("before Isolate"), std::string::npos) << ran.reply;
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_EQ(ran.out, "");
}

TEST_F(ExecAgentTest, EofEndsTheAgentAndItsSpares) {
  Spare spare = SpawnWaiting();
  agent_->HangUp();
  absl::StatusOr<int> wstatus = agent_->WaitExit(absl::Seconds(10));
  ASSERT_TRUE(wstatus.ok()) << wstatus.status();
  EXPECT_TRUE(WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == 0) << *wstatus;
  EXPECT_NE(::kill(spare.pid, 0), 0);
}

}  // namespace
}  // namespace zygo::agents::exec
