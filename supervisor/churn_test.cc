// 10,000 requests through one warm function, most ending well and some ending every bad way
// (exception, deadline, crash), then a check that nothing grew: cgroups, fds, processes,
// threads and the supervisor's own memory.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "supervisor/service_fixture.h"

namespace zygo::supervisor {
namespace {

int64_t StatusField(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

constexpr char kHandler[] = R"(import os, signal, time
def main(event):
    kind = event["kind"]
    if kind == "raise":
        raise RuntimeError("asked to")
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "slow":
        time.sleep(6)
    return event["i"]
)";

class ChurnTest : public ServiceFixture {};

TEST_F(ChurnTest, TenThousandRequestsLeaveNothingBehind) {
  WriteCode("churn.py", kHandler);
  // 3 s: a batch of 200 waits for spares; on a 2-vCPU host whose forks are slow (a bare
  // Python fork takes 8 ms to its first statement on some) 2 s was within reach of the
  // last request of a batch, with the zygote tree's larger zygotes to fork.
  Up("name = \"churn\"\nentry = \"churn.py:main\"\nspares = 4\n[limits]\ntimeout = \"3s\"\n");
  // Warm it and let its spares and its reusable request cgroups settle (a short burst, then
  // quiet) before the baseline is taken.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Call("churn", R"({"kind": "ok", "i": 0})").ok);
  ASSERT_TRUE(Call("churn", R"({"kind": "ok", "i": 0})").ok);
  usleep(500'000);
  const size_t cgroups_before = OurCgroups().size();
  const size_t processes_before = DescendantsOf(OurAgents()).size();
  const int fds_before = OpenFdCount();
  const int64_t threads_before = StatusField("Threads");
  const int64_t rss_before_kb = StatusField("VmRSS");

  constexpr int kRequests = 10'000;
  constexpr int kBatch = 200;
  int ok = 0, raised = 0, crashed = 0, timed_out = 0;
  for (int start = 0; start < kRequests; start += kBatch) {
    std::vector<std::promise<ExecReply>> replies(kBatch);
    for (int j = 0; j < kBatch; ++j) {
      int i = start + j;
      const char* kind = i % 500 == 7 ? "slow" : i % 100 == 3 ? "crash" : i % 50 == 1 ? "raise"
                                                                                      : "ok";
      ExecRequest request;
      request.function = "churn";
      request.event_json = absl::StrCat(R"({"kind": ")", kind, R"(", "i": )", i, "}");
      service_->Exec(request, [&replies, j](ExecReply reply) { replies[j].set_value(reply); });
    }
    for (auto& promise : replies) {
      // Every promise is waited for, even after a failure: the callbacks still hold them.
      ExecReply reply = promise.get_future().get();
      EXPECT_TRUE(reply.status.ok()) << reply.status;
      if (reply.ok) ++ok;
      if (reply.error_type == "RuntimeError") ++raised;
      if (reply.error_type == "crashed") ++crashed;
      if (reply.outcome.timed_out) ++timed_out;
    }
  }
  EXPECT_EQ(ok + raised + crashed + timed_out, kRequests);
  EXPECT_EQ(timed_out, kRequests / 500);
  EXPECT_GT(raised, 0);
  EXPECT_GT(crashed, 0);

  usleep(500'000);  // the last requests' cgroups go after their replies
  ASSERT_TRUE(Call("churn", R"({"kind": "ok", "i": 0})").ok);  // trims what the burst left
  usleep(500'000);
  // Emptied request cgroups are kept for reuse, at most one per spare (4 here), each with
  // some files open (below): bounded, never per request.
  const size_t cgroups_after = OurCgroups().size();
  EXPECT_LE(cgroups_after, cgroups_before + 4);
  const int pooled = static_cast<int>(cgroups_after) - static_cast<int>(cgroups_before);
  EXPECT_LE(DescendantsOf(OurAgents()).size(), processes_before);
  // Held open per pooled cgroup: memory.max_usage_in_bytes, and per v1 hierarchy (four at
  // most) cgroup.procs and tasks.
  constexpr int kFdsPerPooledCgroup = 9;
  EXPECT_LE(OpenFdCount(), fds_before + kFdsPerPooledCgroup * std::max(pooled, 0));
  if (OpenFdCount() > fds_before + kFdsPerPooledCgroup * std::max(pooled, 0)) {
    system(absl::StrCat("ls -l /proc/", getpid(), "/fd >&2").c_str());
  }
  EXPECT_EQ(StatusField("Threads"), threads_before);
  // The supervisor's memory may settle a little higher (allocator arenas), never by a
  // per-request amount: 10,000 leaked replies would be tens of megabytes.
  EXPECT_LT(StatusField("VmRSS") - rss_before_kb, 16 * 1024)
      << "before " << rss_before_kb << " kB, after " << StatusField("VmRSS") << " kB";
  RecordProperty("requests_ok", ok);
}

}  // namespace
}  // namespace zygo::supervisor
