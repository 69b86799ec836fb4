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
#include "supervisor/service_fixture.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

class WarmExecTest : public ServiceFixture {
 protected:
  void UpExec(const std::string& name, const std::string& command, const std::string& extra = "") {
    Up(absl::StrCat("name = \"", name, "\"\nruntime = \"exec\"\nentry = ", command,
                    "\ncode = \".\"\n", extra));
  }
};

TEST_F(WarmExecTest, StdinInStdoutOut) {
  UpExec("cat", "\"/bin/cat\"");
  ExecReply reply = Call("cat", "hello through a warm sandbox");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
  EXPECT_EQ(reply.stdout_data, "hello through a warm sandbox");
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kOk);
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
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kNonzeroExit);
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
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kTimeout);
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
    service_->Exec(request,
                   [&promises, i](ExecReply reply) { promises[i].set_value(std::move(reply)); });
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

TEST_F(WarmExecTest, RestartedServiceServesTheSameFunctions) {
  UpExec("kept", "\"/bin/cat\"");
  ASSERT_TRUE(Call("kept", "before").ok);
  service_->Shutdown();
  service_.reset();
  StartService();
  std::vector<FunctionInfo> listed = service_->List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "kept");
  EXPECT_EQ(Call("kept", "after a restart").stdout_data, "after a restart");
  ASSERT_TRUE(service_->Down("kept").ok());
  service_->Shutdown();
  StartService();
  EXPECT_TRUE(service_->List().empty()) << "down is remembered too";
}

TEST_F(WarmExecTest, NothingLeftBehind) {
  UpExec("tidy", "\"/bin/cat\"");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Call("tidy", "x").ok);
  ASSERT_FALSE(OurCgroups().empty()) << "the warm function has a cgroup while it runs";
  service_->Shutdown();
  service_.reset();
  EXPECT_TRUE(OurAgents().empty());
  EXPECT_TRUE(OurCgroups().empty());
  EXPECT_TRUE(testing::LeftoverCgroups().empty());
}

// A function on an OCI image from the image store (`zygo load`ed here, and pull = "never":
// the name is local): the sandbox's root is the image's flattened root, with its config's Env and
// User, and the command goes after its Entrypoint (["/bin/sh", "-c"]), as with `docker run`.
TEST_F(WarmExecTest, RunsOnAnOciImageFromTheStore) {
  UseOwnImageStore();
  UpExec("img",
         "[\"echo $FOO; id -u; ls /bin/busybox; "
         "test -e /usr/bin/python3 && echo host /usr || echo no host /usr\"]",
         "image = \"multi:test\"\npull = \"never\"\n");
  // The control: before the image is in the store, the function cannot warm, and says so.
  ExecReply missing = Call("img");
  EXPECT_FALSE(missing.status.ok());
  EXPECT_NE(missing.status.message().find("zygo pull"), std::string::npos) << missing.status;

  LoadTestImage("busybox-multilayer", "multi:test");

  ExecReply reply = Call("img");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message << reply.stderr_data;
  // FOO=bar and user 1000 come from the image's config; busybox is its only program.
  EXPECT_EQ(reply.stdout_data, "bar\n1000\n/bin/busybox\nno host /usr\n");
}

}  // namespace
}  // namespace zygo::supervisor
