// A warm request forks past its pids limit, Python and warm-exec, through a real
// supervisor's HTTP and gRPC APIs: the fork is refused and the outcome says pids_limit,
// as `zygo run` says it; the same request forking under the limit says ok, and so does
// every request after the one that hit it.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "security_tests/warm_suite.h"

namespace zygo::testing {
namespace {

constexpr int kPidsLimit = 8;  // the request's own process and 7 more

// Forks event['forks'] children that wait on a pipe, stopping at the first refusal.
constexpr char kForker[] = R"(import errno, os


def main(event):
    r, w = os.pipe()
    children, refused = [], None
    for _ in range(event['forks']):
        try:
            pid = os.fork()
        except OSError as e:
            refused = errno.errorcode.get(e.errno, str(e.errno))
            break
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        children.append(pid)
    os.close(w)
    for pid in children:
        os.waitpid(pid, 0)
    return {'forked': len(children), 'refused': refused}
)";

// The same with a shell: N (on stdin) background sleeps.
constexpr char kShellForker[] =
    "read n; i=0; pids=; while [ \"$i\" -lt \"$n\" ]; do sleep 30 & pids=\"$pids $!\"; "
    "i=$((i+1)); done; kill $pids; wait; echo \"forked $i\"";

// Run with each function in a sandbox of its own, and with the zygote tree.
class WarmLimitsEscape : public WarmSuiteBothLayouts {
 protected:
  void SetUp() override {
    WarmSuiteBothLayouts::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteFile("code/forker.py", kForker);
    StartSupervisor();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string limits =
        absl::StrCat("cold_after = \"0\"\n[limits]\npids = ", kPidsLimit, "\ntimeout = \"20s\"\n");
    absl::Status up =
        Up("forker", absl::StrCat("name = \"forker\"\nentry = \"forker.py:main\"\n", limits));
    ASSERT_TRUE(up.ok()) << up;
    up = Up("shforker",
            absl::StrCat("name = \"shforker\"\nruntime = \"exec\"\nentry = [\"/bin/sh\", \"-c\", ",
                         nlohmann::json(kShellForker).dump(), "]\n", limits));
    ASSERT_TRUE(up.ok()) << up;
  }
};

TEST_P(WarmLimitsEscape, APythonRequestForkingPastItsPidsLimitSaysPidsLimit) {
  // Control first: under the limit every fork works and the request is ok.
  nlohmann::json under = OverHttp("forker", {{"forks", 3}});
  EXPECT_EQ(under["outcome"]["status"], "ok") << under.dump();
  EXPECT_EQ(under["result"]["forked"], 3) << under.dump();
  EXPECT_TRUE(under["result"]["refused"].is_null()) << under.dump();

  nlohmann::json past = OverHttp("forker", {{"forks", 20}});
  EXPECT_EQ(past["result"]["refused"], "EAGAIN") << past.dump();
  EXPECT_EQ(past["result"]["forked"], kPidsLimit - 1) << past.dump();
  EXPECT_EQ(past["outcome"]["status"], "pids_limit") << past.dump();
  EXPECT_TRUE(past["ok"]) << "the handler itself returned: " << past.dump();

  zygo::v1::ExecReply grpc_past = OverGrpc("forker", R"({"forks": 20})");
  EXPECT_EQ(grpc_past.outcome().status(), "pids_limit") << grpc_past.DebugString();
  zygo::v1::ExecReply grpc_under = OverGrpc("forker", R"({"forks": 3})");
  EXPECT_EQ(grpc_under.outcome().status(), "ok") << grpc_under.DebugString();

  // The requests after one that hit the limit are not blamed for it.
  for (int i = 0; i < 4; ++i) {
    nlohmann::json after = OverHttp("forker", {{"forks", 3}});
    EXPECT_EQ(after["outcome"]["status"], "ok") << after.dump();
  }
}

TEST_P(WarmLimitsEscape, AWarmExecRequestForkingPastItsPidsLimitSaysPidsLimit) {
  nlohmann::json under = OverHttp("shforker", 3);
  EXPECT_EQ(under["outcome"]["status"], "ok") << under.dump();
  EXPECT_EQ(under["stdout"], "forked 3\n") << under.dump();

  nlohmann::json past = OverHttp("shforker", 20);
  EXPECT_EQ(past["outcome"]["status"], "pids_limit") << past.dump();
  EXPECT_NE(past["stdout"], "forked 20\n") << past.dump();

  zygo::v1::ExecReply grpc_past = OverGrpc("shforker", "20");
  EXPECT_EQ(grpc_past.outcome().status(), "pids_limit") << grpc_past.DebugString();
  zygo::v1::ExecReply grpc_under = OverGrpc("shforker", "3");
  EXPECT_EQ(grpc_under.outcome().status(), "ok") << grpc_under.DebugString();
  EXPECT_EQ(grpc_under.stdout(), "forked 3\n");
}

INSTANTIATE_WARM_SUITE(WarmLimitsEscape);

}  // namespace
}  // namespace zygo::testing
