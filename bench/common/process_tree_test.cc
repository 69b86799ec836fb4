// Descendants and PSS of real processes: a forked child and grandchild are found under
// this test and not under the child's sibling; their PSS is read.
#include "bench/common/process_tree.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

bool Has(const std::vector<pid_t>& pids, pid_t pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

TEST(ProcessTree, FindsChildrenAndGrandchildrenButNotItself) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(ready[1], &grandchild, sizeof(grandchild));
    pause();
    _exit(0);
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(ready[0], &grandchild, sizeof(grandchild)),
            static_cast<ssize_t>(sizeof(grandchild)));

  std::vector<pid_t> mine = Descendants(getpid());
  EXPECT_TRUE(Has(mine, child));
  EXPECT_TRUE(Has(mine, grandchild));
  EXPECT_FALSE(Has(mine, getpid()));
  std::vector<pid_t> under_child = Descendants(child);
  EXPECT_EQ(under_child, std::vector<pid_t>{grandchild});

  absl::StatusOr<PssTotal> total = SumPss({child, grandchild});
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(total->processes, 2);
  EXPECT_GT(total->sum.kb, 0);
  EXPECT_GT(total->sum.anon_kb, 0);
  EXPECT_LE(total->sum.anon_kb + total->sum.file_kb, total->sum.kb + 1);

  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

TEST(ProcessTree, TreeCpuCountsABusyChild) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<unsigned long> spins{0};  // atomic, so the loop is not optimised away
    for (;;) spins.fetch_add(1, std::memory_order_relaxed);
  }
  usleep(300'000);
  std::optional<double> cpu = TreeCpuSeconds(child);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GT(*cpu, 0.05);  // spinning for 0.3 s, even on a busy two-CPU host
  std::optional<double> mine = TreeCpuSeconds(getpid());
  ASSERT_TRUE(mine.has_value());
  EXPECT_GE(*mine, *cpu);  // the child is in this process's tree
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(TreeCpuSeconds(child).has_value());
}

TEST(ProcessTree, AGoneProcessIsNotFoundAndCountedAsVanished) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(absl::IsNotFound(ReadPss(child).status()));
  absl::StatusOr<PssTotal> total = SumPss({child, getpid()});
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(total->vanished, 1);
  EXPECT_EQ(total->processes, 1);
  EXPECT_GT(total->sum.kb, 0);
  EXPECT_GT(total->sum.anon_kb, 0);
  EXPECT_LE(total->sum.anon_kb + total->sum.file_kb, total->sum.kb + 1);
}

}  // namespace
}  // namespace zygo::bench
