// The service core end to end with real sandboxes and the warm-exec agent: each request is
// a fresh process of the function's command in its own cgroup, with its own deadline.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "supervisor/state_store.h"
#include "supervisor/supervisor_service.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

int ParentOf(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) return atoi(line.c_str() + 5);
  }
  return 0;
}

// The agents of this test's own sandboxes: the agent's parent is a sandbox init, whose
// parent is this process (other tests' agents are never touched).
std::vector<int> OurAgents() {
  std::vector<int> ours;
  for (int pid : testing::ProcessesMatching("/.zygo-agent")) {
    if (ParentOf(ParentOf(pid)) == getpid()) ours.push_back(pid);
  }
  return ours;
}

class WarmExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for cgroups";
    cgroups_ = core::ProbeCgroupDriver();
    if (!cgroups_.ok()) GTEST_SKIP() << "no usable cgroups: " << cgroups_.status();
    // A fresh state dir per test: a stored function would be served again (on purpose).
    std::string pattern = absl::StrCat(getenv("TEST_TMPDIR"), "/warm-exec-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto store = StateStore::Open(absl::StrCat(dir_, "/state"));
    ASSERT_TRUE(store.ok()) << store.status();
    SupervisorOptions options;
    options.host.cgroups = cgroups_->get();
    options.host.exec_agent = testing::Runfile("agents/exec/zygo-agent-exec");
    options.workers = 16;
    std::vector<std::string> warnings;
    auto service = SupervisorService::Create(*std::move(store), options, &warnings);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
  }

  void TearDown() override {
    if (service_) service_->Shutdown();
    service_.reset();
  }

  void UpExec(const std::string& name, const std::string& command,
              const std::string& extra = "") {
    std::string toml = absl::StrCat("name = \"", name, "\"\nruntime = \"exec\"\nentry = ", command,
                                    "\ncode = \".\"\n", extra);
    auto up = service_->Up(toml, absl::StrCat(name, ".toml"), dir_);
    ASSERT_TRUE(up.ok()) << up.status();
  }

  ExecReply Call(const std::string& name, const std::string& input = "") {
    std::promise<ExecReply> promise;
    ExecRequest request;
    request.function = name;
    request.stdin_data = input;
    request.event_json = input;
    service_->Exec(request, [&](ExecReply reply) { promise.set_value(std::move(reply)); });
    return promise.get_future().get();
  }

  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> cgroups_ = absl::UnknownError("unset");
  std::string dir_;
  std::unique_ptr<SupervisorService> service_;
};

TEST_F(WarmExecTest, StdinInStdoutOut) {
  UpExec("cat", "\"/bin/cat\"");
  ExecReply reply = Call("cat", "hello through a warm sandbox");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
  EXPECT_EQ(reply.stdout_data, "hello through a warm sandbox");
  EXPECT_EQ(reply.outcome.status, "ok");
  EXPECT_GT(reply.timings.run_us, 0);
  EXPECT_GT(reply.timings.admit_us, 0) << "the spare was moved into a cgroup of its own";
}

TEST_F(WarmExecTest, EachRequestIsAFreshProcessInItsOwnCgroup) {
  UpExec("who", "[\"/bin/sh\", \"-c\", \"echo $$; cat /proc/self/cgroup | grep memory\"]");
  ExecReply first = Call("who");
  ExecReply second = Call("who");
  ASSERT_TRUE(first.ok && second.ok) << first.stderr_data << second.stderr_data;
  EXPECT_NE(first.stdout_data, second.stdout_data);
  EXPECT_NE(first.stdout_data.find("request-"), std::string::npos) << first.stdout_data;
}

TEST_F(WarmExecTest, ExitCodeAndStderrComeBack) {
  UpExec("fail", "[\"/bin/sh\", \"-c\", \"echo oops >&2; exit 3\"]");
  ExecReply reply = Call("fail");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.outcome.exit_code, 3);
  EXPECT_EQ(reply.outcome.status, "nonzero_exit");
  EXPECT_EQ(reply.stderr_data, "oops\n");
}

TEST_F(WarmExecTest, DeadlineKillsTheWholeRequest) {
  // The command forks a grandchild that would outlive it; the request's cgroup goes whole.
  UpExec("sleepy", "[\"/bin/sh\", \"-c\", \"sleep 30 & sleep 30\"]",
         "[limits]\ntimeout = \"500ms\"\n");
  auto start = std::chrono::steady_clock::now();
  ExecReply reply = Call("sleepy");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_EQ(reply.outcome.status, "timeout");
  EXPECT_TRUE(reply.outcome.timed_out);
  EXPECT_EQ(reply.outcome.exit_code, 137);
  EXPECT_LT(took, std::chrono::seconds(5));
  // The function still serves after a killed request.
  UpExec("cat2", "\"/bin/cat\"");
  EXPECT_EQ(Call("cat2", "still here").stdout_data, "still here");
}

TEST_F(WarmExecTest, UnknownFunctionIsNotFound) {
  ExecReply reply = Call("nope");
  EXPECT_TRUE(absl::IsNotFound(reply.status)) << reply.status;
}

TEST_F(WarmExecTest, CommandNotFoundIsAnError) {
  UpExec("missing", "\"/no/such/program\"");
  ExecReply reply = Call("missing");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.error_type, "ExecError");
  EXPECT_EQ(reply.outcome.exit_code, 127);
}

TEST_F(WarmExecTest, ManyRequestsAtOnceAllAnswered) {
  UpExec("echo", "[\"/bin/sh\", \"-c\", \"cat; echo\"]");
  constexpr int kRequests = 100;
  std::vector<std::promise<ExecReply>> promises(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    ExecRequest request;
    request.function = "echo";
    request.stdin_data = absl::StrCat("request ", i);
    service_->Exec(request, [&promises, i](ExecReply reply) {
      promises[i].set_value(std::move(reply));
    });
  }
  for (int i = 0; i < kRequests; ++i) {
    ExecReply reply = promises[i].get_future().get();
    ASSERT_TRUE(reply.status.ok()) << reply.status;
    EXPECT_EQ(reply.stdout_data, absl::StrCat("request ", i, "\n"));
  }
}

TEST_F(WarmExecTest, ZygoteKilledFromOutsideIsRewarmed) {
  UpExec("phoenix", "\"/bin/cat\"");
  ASSERT_TRUE(Call("phoenix", "before").ok);
  // Kill the agent (the zygote) from outside, as an operator or the OOM killer would.
  std::vector<int> agents = OurAgents();
  ASSERT_EQ(agents.size(), 1u);
  for (int pid : agents) kill(pid, SIGKILL);
  // The next request either meets the dead zygote (typed Unavailable) or a re-warmed one.
  ExecReply after = Call("phoenix", "after");
  if (!after.status.ok()) {
    EXPECT_TRUE(absl::IsUnavailable(after.status)) << after.status;
    after = Call("phoenix", "after");
  }
  ASSERT_TRUE(after.status.ok()) << after.status;
  EXPECT_EQ(after.stdout_data, "after");
}

TEST_F(WarmExecTest, NothingLeftBehind) {
  UpExec("tidy", "\"/bin/cat\"");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Call("tidy", "x").ok);
  service_->Shutdown();
  service_.reset();
  EXPECT_TRUE(OurAgents().empty());
  // Our own pid is alive, so our cgroups are not "leftovers" by name; look for them directly.
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line, memory;
  while (std::getline(cgroup, line)) {
    if (line.find(":memory:") != std::string::npos) memory = line.substr(line.rfind(':') + 1);
  }
  std::string parent = absl::StrCat("/sys/fs/cgroup/memory", memory == "/" ? "" : memory);
  std::string prefix = absl::StrCat("zygo-", getpid(), "-");
  std::vector<std::string> left;
  for (const std::string& dir : testing::LeftoverCgroups()) left.push_back(dir);
  std::string listing;
  if (FILE* ls = popen(absl::StrCat("ls ", parent, " 2>/dev/null").c_str(), "r")) {
    char buffer[4096];
    while (fgets(buffer, sizeof(buffer), ls)) listing += buffer;
    pclose(ls);
  }
  EXPECT_EQ(listing.find(prefix), std::string::npos) << listing;
  EXPECT_TRUE(left.empty());
}

}  // namespace
}  // namespace zygo::supervisor
