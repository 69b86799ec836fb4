// A forked child plays a zygote agent over the socketpair: Hello -> Run -> Forked -> Go ->
// Done, with the request child forked by the agent and a result pipe passed in Run.
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

// The agent's side. Returns 0 on success or the number of the step that failed, which
// becomes the agent's exit status.
int RunMiniAgent(int sock) {
  if (!SendFrame(sock, *Encode(HelloMessage{"mini", kProtocolVersion, ::getpid()}), {}).ok()) {
    return 1;
  }
  absl::StatusOr<ReceivedFrame> run_frame = ReceiveFrame(sock, absl::Seconds(10));
  if (!run_frame.ok()) return 2;
  absl::StatusOr<RunMessage> run = DecodeRun(*run_frame);
  if (!run.ok() || run->fd_layout != FdLayout::kResultPipe) return 3;
  int go_pipe[2];
  if (::pipe2(go_pipe, O_CLOEXEC) != 0) return 4;
  const pid_t child = ::fork();
  if (child < 0) return 5;
  if (child == 0) {
    // The request child: parked until the supervisor has admitted it, then runs.
    char go = 0;
    if (::read(go_pipe[0], &go, 1) != 1) ::_exit(100);
    const std::string out = "result:" + run->event;
    if (::write(run_frame->fds[0].get(), out.data(), out.size()) !=
        static_cast<ssize_t>(out.size())) {
      ::_exit(101);
    }
    ::_exit(3);
  }
  ::close(go_pipe[0]);
  run_frame->fds.clear();  // Only the request child writes results.
  if (!SendFrame(sock, *Encode(ForkedMessage{run->request_id, child}), {}).ok()) return 6;
  absl::StatusOr<ReceivedFrame> go_frame = ReceiveFrame(sock, absl::Seconds(10));
  if (!go_frame.ok()) return 7;
  absl::StatusOr<GoMessage> go = DecodeGo(*go_frame);
  if (!go.ok() || go->request_id != run->request_id) return 8;
  if (::write(go_pipe[1], "g", 1) != 1) return 9;
  int wstatus = 0;
  if (::waitpid(child, &wstatus, 0) != child) return 10;
  DoneMessage done{run->request_id, ExitKind::kExited, 0, "done"};
  if (WIFSIGNALED(wstatus)) {
    done.exit_kind = ExitKind::kSignalled;
    done.exit_code = WTERMSIG(wstatus);
  } else {
    done.exit_code = WEXITSTATUS(wstatus);
  }
  if (!SendFrame(sock, *Encode(done), {}).ok()) return 11;
  // Wait for the supervisor to hang up, so EOF handling is exercised on this side too.
  return IsPeerClosed(ReceiveFrame(sock, absl::Seconds(10)).status()) ? 0 : 12;
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
  const pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    supervisor.Reset();
    ::_exit(RunMiniAgent(agent_end.get()));
  }
  agent_end.Reset();

  absl::StatusOr<ReceivedFrame> frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<HelloMessage> hello = DecodeHello(*frame);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->agent_kind, "mini");
  EXPECT_EQ(hello->pid, agent);

  int result_pipe[2];
  ASSERT_EQ(::pipe2(result_pipe, O_CLOEXEC), 0);
  UniqueFd result_read(result_pipe[0]);
  UniqueFd result_write(result_pipe[1]);
  const int result_fd = result_write.get();
  ASSERT_TRUE(
      SendFrame(supervisor.get(),
                *Encode(RunMessage{42, "handler.py:main", "ev", 5000, FdLayout::kResultPipe}),
                {&result_fd, 1})
          .ok());
  result_write.Reset();

  frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<ForkedMessage> forked = DecodeForked(*frame);
  ASSERT_TRUE(forked.ok()) << forked.status();
  EXPECT_EQ(forked->request_id, 42u);
  // Here the supervisor would admit forked->pid into the request's cgroup.
  EXPECT_EQ(ParentOf(static_cast<pid_t>(forked->pid)), agent);

  ASSERT_TRUE(SendFrame(supervisor.get(), *Encode(GoMessage{42}), {}).ok());
  frame = ReceiveFrame(supervisor.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status();
  absl::StatusOr<DoneMessage> done = DecodeDone(*frame);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->request_id, 42u);
  EXPECT_EQ(done->exit_kind, ExitKind::kExited);
  EXPECT_EQ(done->exit_code, 3);
  EXPECT_EQ(done->result, "done");

  char buf[64] = {};
  const ssize_t n = ::read(result_read.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "result:ev");

  supervisor.Reset();  // Hang up; the agent expects EOF and exits 0.
  int wstatus = 0;
  ASSERT_EQ(::waitpid(agent, &wstatus, 0), agent);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "agent failed at step " << WEXITSTATUS(wstatus);
}

}  // namespace
}  // namespace zygo::wire
