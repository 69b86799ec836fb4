// A forked child plays a zygote agent over protocol v3: Hello; Spawn -> the spare itself
// sends Forked(pid, child channel fd); Run on the child channel -> Done(result); the zygote
// reaps the spare -> Done(spare id, exit status); EOF -> the agent exits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {
namespace {

using base::UniqueFd;

// The spare: hands the supervisor a child channel, then serves one Run on it. Exits with 0
// or the number of the step that failed (never returns).
[[noreturn]] void RunSpare(int zygote_sock, uint64_t spare_id) {
  auto channel = MakeAgentSocketPair();
  if (!channel.ok()) ::_exit(20);
  const int handed = channel->second.get();
  if (!SendFrame(zygote_sock, *Encode(ForkedMessage{spare_id, ::getpid()}), {&handed, 1}).ok()) {
    ::_exit(21);
  }
  ::close(zygote_sock);
  channel->second.Reset();
  const int sock = channel->first.get();
  absl::StatusOr<ReceivedFrame> run_frame = ReceiveFrame(sock, absl::Seconds(10));
  if (!run_frame.ok()) ::_exit(22);
  absl::StatusOr<RunMessage> run = DecodeRun(*run_frame);
  if (!run.ok() || run->fd_layout != FdLayout::kStdio) ::_exit(23);
  const std::string out = "printed by " + run->entry;
  if (::write(run_frame->fds[1].get(), out.data(), out.size()) !=
      static_cast<ssize_t>(out.size())) {
    ::_exit(24);
  }
  const DoneMessage done{run->request_id, ExitKind::kExited, 0, "result:" + run->event};
  if (!SendFrame(sock, *Encode(done), {}).ok()) ::_exit(25);
  ::_exit(0);
}

// The zygote's side. Returns 0 on success or the number of the step that failed, which
// becomes the agent's exit status.
int RunMiniZygote(int sock) {
  if (!SendFrame(sock, *Encode(HelloMessage{"mini", kProtocolVersion, ::getpid()}), {}).ok()) {
    return 1;
  }
  absl::StatusOr<ReceivedFrame> spawn_frame = ReceiveFrame(sock, absl::Seconds(10));
  if (!spawn_frame.ok()) return 2;
  absl::StatusOr<SpawnMessage> spawn = DecodeSpawn(*spawn_frame);
  if (!spawn.ok()) return 3;
  const pid_t child = ::fork();
  if (child < 0) return 4;
  if (child == 0) RunSpare(sock, spawn->spare_id);
  int wstatus = 0;
  if (::waitpid(child, &wstatus, 0) != child) return 5;
  DoneMessage reaped{spawn->spare_id, ExitKind::kExited, 0, ""};
  if (WIFSIGNALED(wstatus)) {
    reaped.exit_kind = ExitKind::kSignalled;
    reaped.exit_code = WTERMSIG(wstatus);
  } else {
    reaped.exit_code = WEXITSTATUS(wstatus);
  }
  if (!SendFrame(sock, *Encode(reaped), {}).ok()) return 6;
  // Wait for the supervisor to hang up, so EOF handling is exercised on this side too.
  return IsPeerClosed(ReceiveFrame(sock, absl::Seconds(10)).status()) ? 0 : 7;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  // Field 4 follows the ")" that ends the command name.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

TEST(MiniAgentTest, WarmPathExchange) {
  auto pair = MakeAgentSocketPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  UniqueFd supervisor = std::move(pair->first);
  UniqueFd agent_end = std::move(pair->second);
  ASSERT_TRUE(EnablePeerCredentials(supervisor.get()).ok());
  const pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    supervisor.Reset();
    ::_exit(RunMiniZygote(agent_end.get()));
  }
  agent_end.Reset();

  absl::StatusOr<ReceivedFrame> frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<HelloMessage> hello = DecodeHello(*frame);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->agent_kind, "mini");
  EXPECT_EQ(hello->pid, agent);
  EXPECT_EQ(frame->sender_pid, agent);

  ASSERT_TRUE(SendFrame(supervisor.get(), *Encode(SpawnMessage{7}), {}).ok());
  frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<ForkedMessage> forked = DecodeForked(*frame);
  ASSERT_TRUE(forked.ok()) << forked.status();
  EXPECT_EQ(forked->request_id, 7u);
  // Here the supervisor would admit sender_pid into the request's cgroup: it is the spare
  // itself (a child of the zygote), whatever the payload claims.
  EXPECT_EQ(frame->sender_pid, forked->pid);
  EXPECT_EQ(ParentOf(static_cast<pid_t>(frame->sender_pid)), agent);
  UniqueFd child_channel = std::move(frame->fds[0]);

  int out_pipe[2];
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  UniqueFd out_read(out_pipe[0]);
  UniqueFd out_write(out_pipe[1]);
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const int stdio[3] = {dev_null.get(), out_write.get(), dev_null.get()};
  ASSERT_TRUE(SendFrame(child_channel.get(),
                        *Encode(RunMessage{42, "handler.py:main", "ev", 5000, FdLayout::kStdio}),
                        stdio)
                  .ok());
  out_write.Reset();

  frame = ReceiveFrame(child_channel.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<DoneMessage> done = DecodeDone(*frame);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->request_id, 42u);
  EXPECT_EQ(done->exit_code, 0);
  EXPECT_EQ(done->result, "result:ev");
  EXPECT_TRUE(IsPeerClosed(ReceiveFrame(child_channel.get(), absl::Seconds(10)).status()));

  frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<DoneMessage> reaped = DecodeDone(*frame);
  ASSERT_TRUE(reaped.ok()) << reaped.status();
  EXPECT_EQ(reaped->request_id, 7u);
  EXPECT_EQ(reaped->exit_kind, ExitKind::kExited);
  EXPECT_EQ(reaped->exit_code, 0) << "spare failed at step " << reaped->exit_code;

  char buf[64] = {};
  const ssize_t n = ::read(out_read.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "printed by handler.py:main");

  supervisor.Reset();  // Hang up; the agent expects EOF and exits 0.
  int wstatus = 0;
  ASSERT_EQ(::waitpid(agent, &wstatus, 0), agent);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "agent failed at step " << WEXITSTATUS(wstatus);
}

}  // namespace
}  // namespace zygo::wire
