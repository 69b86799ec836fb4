// The real supervisor asks for a short scheduler slice before it makes any thread or
// zygote (core/base/sys/sched_attr.h), so every task on a request's path has it: its
// own threads and the spares. The zygote, whose forks are background work, takes the
// longest slice instead.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/sched_attr.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

namespace fs = std::filesystem;
using base::sys::SchedAttr;

// The slice a task runs with (sched_attr.sched_runtime), or -1 when it is gone.
int64_t SliceOf(pid_t tid) {
  SchedAttr attr{};
  if (syscall(SYS_sched_getattr, tid, &attr, sizeof(attr), 0) != 0) return -1;
  return static_cast<int64_t>(attr.sched_runtime);
}

pid_t ParentOf(pid_t pid) { return base::sys::ReadParentPid(pid).value_or(0); }

bool IsAgent(pid_t pid) {
  absl::StatusOr<std::string> comm = base::sys::ReadFile(absl::StrCat("/proc/", pid, "/comm"));
  return comm.ok() && absl::StrContains(*comm, "zygo-agent");
}

// `root` and every process below it.
std::vector<pid_t> TreeOf(pid_t root) {
  std::vector<pid_t> tree = {root};
  for (size_t i = 0; i < tree.size(); ++i) {
    for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
      int pid = 0;
      if (absl::SimpleAtoi(entry.path().filename().string(), &pid) && ParentOf(pid) == tree[i]) {
        tree.push_back(pid);
      }
    }
  }
  return tree;
}

// Whether this kernel keeps a custom slice (Linux 6.12+), tried on a child of our own.
bool KernelKeepsCustomSlices() {
  const pid_t child = fork();
  if (child == 0) {
    _exit(base::sys::RawRequestSlice(base::sys::kShortSliceNs) == 0 &&
                  SliceOf(0) == static_cast<int64_t>(base::sys::kShortSliceNs)
              ? 0
              : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

TEST(SchedulerSliceTest, TheRequestPathRunsWithTheShortSliceAndTheZygoteWithTheBackgroundOne) {
  if (!KernelKeepsCustomSlices()) GTEST_SKIP() << "this kernel has no custom slices (6.12+)";
  // Control: the slice is not simply what every task here has.
  ASSERT_NE(SliceOf(0), static_cast<int64_t>(base::sys::kShortSliceNs));

  char dir_template[] = "/tmp/zygo-slice-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string binary = testing::Runfile("supervisor/supervisor");
  const std::string listen = dir + "/http.sock", grpc = dir + "/grpc.sock", state = dir + "/state",
                    log = dir + "/log";
  const pid_t supervisor = fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    if (freopen(log.c_str(), "w", stdout) == nullptr || dup2(1, 2) < 0) _exit(126);
    // The demo function: a zygote with spares to look at.
    execl(binary.c_str(), binary.c_str(), "--listen", listen.c_str(), "--grpc-listen", grpc.c_str(),
          "--state-dir", state.c_str(), nullptr);
    _exit(127);
  }

  // Warm once its two spares (children of the zygote, itself below the supervisor) exist
  // and the tree stays the same for a scan: the demo's zygote is forked from a runtime
  // zygote, whose fork is an agent below an agent too for the few milliseconds it lives.
  std::vector<pid_t> tree, last;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    tree = TreeOf(supervisor);
    int agents_under_agents = 0;
    for (pid_t pid : tree) agents_under_agents += IsAgent(pid) && IsAgent(ParentOf(pid)) ? 1 : 0;
    if ((agents_under_agents >= 2 && tree == last) || std::chrono::steady_clock::now() > give_up) {
      break;
    }
    last = tree;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  // The zygote alone takes the background slice: its forks are work nobody waits on, and
  // must neither preempt a request nor hold up a client (agents/python/main.cc). Its spares
  // ask for the short slice again.
  int tasks = 0, right_slices = 0, zygotes = 0, spares = 0;
  std::string wrong;
  for (pid_t pid : tree) {
    const bool agent = IsAgent(pid), parent_agent = IsAgent(ParentOf(pid));
    const bool zygote = agent && !parent_agent;
    zygotes += zygote ? 1 : 0;
    spares += agent && parent_agent ? 1 : 0;
    std::error_code error;
    for (const fs::directory_entry& task :
         fs::directory_iterator(absl::StrCat("/proc/", pid, "/task"), error)) {
      int tid = 0;
      if (!absl::SimpleAtoi(task.path().filename().string(), &tid)) continue;
      const int64_t slice = SliceOf(tid);
      if (slice < 0) continue;  // gone meanwhile
      ++tasks;
      const uint64_t expected = zygote ? base::sys::kBackgroundSliceNs : base::sys::kShortSliceNs;
      if (slice == static_cast<int64_t>(expected)) {
        ++right_slices;
      } else {
        absl::StrAppend(&wrong, " ", tid, zygote ? " (zygote)" : "", "=", slice);
      }
    }
  }
  kill(supervisor, SIGTERM);
  int status = 0;
  waitpid(supervisor, &status, 0);
  std::error_code ignored;
  fs::remove_all(dir, ignored);

  // The supervisor's threads, a zygote helper, the zygote and two spares at least. The
  // demo function's zygote was forked from a runtime zygote (the zygote tree) and then
  // handed to the runtime sandbox's init: two agents whose parent is none, both zygotes.
  std::printf("%zu processes (%d zygotes, %d spares), %d tasks\n", tree.size(), zygotes, spares,
              tasks);
  EXPECT_EQ(zygotes, 2);
  EXPECT_GE(spares, 1) << "the demo function never got a spare";
  EXPECT_GT(tasks, 8);
  EXPECT_EQ(right_slices, tasks) << "tasks with the wrong slice (tid=ns):" << wrong;
}

}  // namespace
}  // namespace zygo::supervisor
