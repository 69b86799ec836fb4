// The prefault takes the copy-on-write faults up front: after it, writing memory the child
// shares with its parent costs (almost) no page faults; without it, one fault per page.
#include "agents/python/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace zygo::agents::python {
namespace {

constexpr size_t kRegionSize = 64 << 20;

struct ChildReport {
  long faults_on_write = -1;  // Minor faults taken while writing every page of the region.
  size_t pages_touched = 0;
  long long prefault_us = -1;
};

long MinorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Forks; the child optionally prefaults, then writes each page of `region` and reports
// the faults that took.
ChildReport WriteInChild(char* region, bool prefault) {
  int report_pipe[2];
  EXPECT_EQ(::pipe(report_pipe), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ChildReport report;
    if (prefault) {
      absl::StatusOr<PrefaultStats> stats = PrefaultPrivateMemory();
      if (!stats.ok()) ::_exit(1);
      report.pages_touched = stats->pages_touched;
      report.prefault_us = absl::ToInt64Microseconds(stats->elapsed);
    }
    const long before = MinorFaults();
    for (size_t offset = 0; offset < kRegionSize; offset += 4096) region[offset] = 2;
    report.faults_on_write = MinorFaults() - before;
    ::_exit(::write(report_pipe[1], &report, sizeof(report)) == sizeof(report) ? 0 : 2);
  }
  ::close(report_pipe[1]);
  ChildReport report;
  EXPECT_EQ(::read(report_pipe[0], &report, sizeof(report)), static_cast<ssize_t>(sizeof(report)));
  ::close(report_pipe[0]);
  int wstatus = 0;
  EXPECT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  return report;
}

TEST(PrefaultTest, SharedPagesAreFaultedAheadOfTheWrites) {
  void* mapped =
      ::mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char* region = static_cast<char*>(mapped);
  // Transparent huge pages would make one fault cover 512 pages and blur the counts.
  ::madvise(region, kRegionSize, MADV_NOHUGEPAGE);
  std::memset(region, 1, kRegionSize);  // Present in the parent, so shared after fork.
  const size_t pages = kRegionSize / 4096;

  // Control: the same writes without the prefault fault once per page.
  const ChildReport plain = WriteInChild(region, false);
  EXPECT_GE(plain.faults_on_write, static_cast<long>(pages * 9 / 10));

  const ChildReport prefaulted = WriteInChild(region, true);
  EXPECT_GE(prefaulted.pages_touched, pages);
  EXPECT_LT(prefaulted.faults_on_write, 100);
  std::printf(
      "prefault: %zu pages (%zu MiB shared region + the test's own) in %lld us, %.2f us "
      "per page; writes afterwards took %ld faults (%ld without the prefault)\n",
      prefaulted.pages_touched, kRegionSize >> 20, prefaulted.prefault_us,
      static_cast<double>(prefaulted.prefault_us) / prefaulted.pages_touched,
      prefaulted.faults_on_write, plain.faults_on_write);
  ::munmap(region, kRegionSize);
}

TEST(PrefaultTest, UntouchedMemoryStaysUntouched) {
  // A reservation never written in the parent must not become real memory in the child.
  void* mapped = ::mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  const ChildReport report = WriteInChild(static_cast<char*>(mapped), true);
  EXPECT_LT(report.pages_touched, kRegionSize / 4096 / 2);
  // Its pages were not present, so the writes afterwards fault as usual.
  EXPECT_GE(report.faults_on_write, static_cast<long>(kRegionSize / 4096 * 9 / 10));
  ::munmap(mapped, kRegionSize);
}

}  // namespace
}  // namespace zygo::agents::python
