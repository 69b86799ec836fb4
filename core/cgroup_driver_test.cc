// The cgroup interface against whatever this host really has: v1 here (hybrid), v2
// where the host runs the unified hierarchy. A child is put in the cgroup the way
// Launch does it (born inside with CLONE_INTO_CGROUP on v2, attached on v1), then
// tries to break each limit.
#include <linux/sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "core/base/sys/process.h"
#include "core/cgroup.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

class CgroupDriverOnThisHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
    auto driver = ProbeCgroupDriver();
    if (!driver.ok()) GTEST_SKIP() << "no usable cgroups: " << driver.status();
    driver_ = std::move(driver).value();
  }

  // Runs `body` in a child inside `cgroup`; returns its wait status.
  int RunInside(Cgroup& cgroup, void (*body)()) {
    struct clone_args args = {};
    args.exit_signal = SIGCHLD;
    if (cgroup.clone_into_fd() >= 0) {
      args.flags = CLONE_INTO_CGROUP;
      args.cgroup = static_cast<uint64_t>(cgroup.clone_into_fd());
    }
    int go[2];
    EXPECT_EQ(pipe(go), 0);
    long pid = base::sys::RawClone3(&args);
    if (pid == 0) {
      char byte;
      close(go[1]);
      if (read(go[0], &byte, 1) != 1) _exit(99);
      body();
      _exit(0);
    }
    EXPECT_GT(pid, 0) << strerror(static_cast<int>(-pid));
    close(go[0]);
    if (cgroup.clone_into_fd() < 0) {
      EXPECT_TRUE(cgroup.AttachFromParent(static_cast<pid_t>(pid)).ok());
    }
    EXPECT_EQ(write(go[1], "x", 1), 1);
    close(go[1]);
    int status = 0;
    waitpid(static_cast<pid_t>(pid), &status, 0);
    return status;
  }

  std::unique_ptr<CgroupDriver> driver_;
};

void TouchMiB(int mib) {
  for (int i = 0; i < mib; ++i) {
    void* chunk =
        mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) _exit(2);
    memset(chunk, 1, 1 << 20);
  }
}

TEST_F(CgroupDriverOnThisHost, MemoryLimitOomKillsAndIsCounted) {
  auto cgroup = driver_->Create({16 << 20, 64, 1.0});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  int small = RunInside(**cgroup, [] { TouchMiB(2); });
  ASSERT_TRUE(WIFEXITED(small) && WEXITSTATUS(small) == 0) << "control run failed: " << small;
  int big = RunInside(**cgroup, [] { TouchMiB(128); });
  EXPECT_TRUE(WIFSIGNALED(big) && WTERMSIG(big) == SIGKILL) << big;
  auto usage = (*cgroup)->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GE(usage->oom_kills, 1);
  EXPECT_TRUE((*cgroup)->Destroy().ok());
}

TEST_F(CgroupDriverOnThisHost, PidsLimitStopsForksAndIsCounted) {
  auto cgroup = driver_->Create({64 << 20, 4, 1.0});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  int status = RunInside(**cgroup, [] {
    setpgid(0, 0);  // a group of our own, so the kill below stays inside it
    int forked = 0;
    for (int i = 0; i < 16; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        pause();
        _exit(0);
      }
      if (pid < 0) break;
      ++forked;
    }
    kill(0, SIGKILL);
    _exit(forked);
  });
  // The child killed its own group; what matters is the counter.
  (void)status;
  auto usage = (*cgroup)->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GE(usage->pids_max_hits, 1);
  EXPECT_TRUE((*cgroup)->Destroy().ok());
}

TEST_F(CgroupDriverOnThisHost, DestroyRemovesEveryDirectory) {
  auto cgroup = driver_->Create({64 << 20, 16, 0.5});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  std::vector<std::string> paths = (*cgroup)->paths();
  ASSERT_FALSE(paths.empty());
  for (const std::string& path : paths) EXPECT_EQ(access(path.c_str(), F_OK), 0) << path;
  ASSERT_TRUE((*cgroup)->Destroy().ok());
  for (const std::string& path : paths) EXPECT_NE(access(path.c_str(), F_OK), 0) << path;
}

}  // namespace
}  // namespace zygo::core
