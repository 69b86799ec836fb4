// The learned prefault, attempted across real forks: a child's scan names the pages it
// wrote (and the file pages it mapped), and another child that takes those pages first
// then uses them with (almost) no page faults, where a control child faults once per page.
#include "agents/python/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace zygo::agents::python {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kRegionSize = 16 << 20;
constexpr size_t kWrittenPages = 512;  // every 4th page of the region's first half

long MinorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Runs `body` in a forked child and returns the bytes it wrote to its pipe.
std::string InChild(const std::function<std::string()>& body) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    const std::string out = body();
    const bool written =
        ::write(pipe_fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
    ::_exit(written ? 0 : 2);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  ::close(pipe_fds[0]);
  int wstatus = 0;
  EXPECT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  return out;
}

std::string Bytes(const std::vector<wire::PageRun>& runs) {
  return std::string(reinterpret_cast<const char*>(runs.data()),
                     runs.size() * sizeof(wire::PageRun));
}
std::vector<wire::PageRun> Runs(const std::string& bytes) {
  std::vector<wire::PageRun> runs(bytes.size() / sizeof(wire::PageRun));
  std::memcpy(runs.data(), bytes.data(), runs.size() * sizeof(wire::PageRun));
  return runs;
}

// Whether [page, page + 4096) lies in a run of the given kind.
bool Covered(const std::vector<wire::PageRun>& runs, uintptr_t page, bool write) {
  for (const wire::PageRun& run : runs) {
    if (run.write == write && page >= run.start && page < run.start + run.pages * kPage) {
      return true;
    }
  }
  return false;
}

class PrefaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* mapped =
        ::mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    region_ = static_cast<char*>(mapped);
    // Transparent huge pages would make one fault cover 512 pages and blur the counts.
    ::madvise(region_, kRegionSize, MADV_NOHUGEPAGE);
    std::memset(region_, 1, kRegionSize);  // Present here, so shared with every child.
  }
  void TearDown() override { ::munmap(region_, kRegionSize); }

  char* WrittenPage(size_t i) const { return region_ + i * 4 * kPage; }

  // A child writes the chosen pages (after taking `prefault` first) and reports the faults.
  long FaultsWriting(const std::vector<wire::PageRun>& prefault, size_t* taken) {
    std::string out = InChild([&] {
      const long taken_pages = static_cast<long>(PopulatePages(prefault));
      const long before = MinorFaults();
      for (size_t i = 0; i < kWrittenPages; ++i) *WrittenPage(i) = 2;
      const long report[2] = {MinorFaults() - before, taken_pages};
      return std::string(reinterpret_cast<const char*>(report), sizeof(report));
    });
    long report[2] = {-1, -1};
    if (out.size() == sizeof(report)) std::memcpy(report, out.data(), sizeof(report));
    *taken = static_cast<size_t>(report[1]);
    return report[0];
  }

  char* region_ = nullptr;
};

TEST_F(PrefaultTest, ALaterChildTakesTheWrittenPagesAheadOfItsWrites) {
  // The learner writes every 4th page of the region's first half.
  const std::vector<wire::PageRun> runs = Runs(InChild([&] {
    for (size_t i = 0; i < kWrittenPages; ++i) *WrittenPage(i) = 3;
    absl::StatusOr<std::vector<wire::PageRun>> scanned = ScanTouchedPages();
    return scanned.ok() ? Bytes(*scanned) : std::string();
  }));
  ASSERT_FALSE(runs.empty());
  for (size_t i = 0; i < kWrittenPages; ++i) {
    ASSERT_TRUE(Covered(runs, reinterpret_cast<uintptr_t>(WrittenPage(i)), true)) << "page " << i;
  }
  // Pages it never wrote stay out: the region's second half, still shared with this process.
  for (size_t offset = kRegionSize / 2; offset < kRegionSize; offset += kPage) {
    ASSERT_FALSE(Covered(runs, reinterpret_cast<uintptr_t>(region_ + offset), true)) << offset;
  }

  // The control: the same writes fault once per page without the prefault.
  size_t taken = 0;
  const long plain = FaultsWriting({}, &taken);
  EXPECT_GE(plain, static_cast<long>(kWrittenPages * 9 / 10));

  const long prefaulted = FaultsWriting(runs, &taken);
  EXPECT_GE(taken, kWrittenPages);
  EXPECT_LT(prefaulted, static_cast<long>(kWrittenPages / 10));
  std::printf("writing %zu shared pages: %ld faults, %ld after taking %zu learned pages\n",
              kWrittenPages, plain, prefaulted, taken);
}

// Code and read-only data: a fork copies none of their page tables, so each child maps
// what it runs anew; the scan names what was mapped since the snapshot, and a later child
// that takes those runs reads them without a fault.
TEST_F(PrefaultTest, ReadOnlyFilePagesMappedSinceTheSnapshotAreReadRuns) {
  constexpr size_t kFilePages = 4096;  // 16 MiB: larger than any one page-cache folio
  char path[] = "/tmp/zygo-prefault-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  const std::string content(kFilePages * kPage, 'z');
  ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  void* mapped = ::mmap(nullptr, kFilePages * kPage, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  ::close(fd);
  const char* file = static_cast<const char*>(mapped);
  const uintptr_t first = reinterpret_cast<uintptr_t>(file);
  const uintptr_t end = first + kFilePages * kPage;
  volatile char sink = 0;
  sink = sink + file[0];  // mapped here; a child still starts without it

  const auto scan = [&](bool with_snapshot) {
    return Runs(InChild([&] {
      absl::StatusOr<MappedFilePages> before = SnapshotMappedFilePages();
      if (!before.ok()) return std::string();
      sink = sink + file[10 * kPage] + file[3000 * kPage];
      absl::StatusOr<std::vector<wire::PageRun>> scanned =
          ScanTouchedPages(with_snapshot ? &*before : nullptr);
      return scanned.ok() ? Bytes(*scanned) : std::string();
    }));
  };
  const std::vector<wire::PageRun> runs = scan(true);
  EXPECT_TRUE(Covered(runs, first + 10 * kPage, false));
  EXPECT_TRUE(Covered(runs, first + 3000 * kPage, false));
  size_t in_file = 0;
  for (const wire::PageRun& run : runs) {
    if (run.start >= first && run.start < end) {
      EXPECT_FALSE(run.write);
      in_file += run.pages;
    }
  }
  // A fault maps the pages around it (fault-around, or the whole page-cache folio, at
  // most 2 MiB), never the far end of the file.
  EXPECT_FALSE(Covered(runs, first + 2000 * kPage, false));
  EXPECT_LT(in_file, kFilePages / 2);
  // The control: without a snapshot no read run is reported at all.
  for (const wire::PageRun& run : scan(false)) EXPECT_TRUE(run.write);

  const auto faults_reading = [&](const std::vector<wire::PageRun>& prefault) {
    const std::string out = InChild([&] {
      PopulatePages(prefault);
      volatile char read = 0;  // on this child's own (already copied) stack page
      const long before = MinorFaults();
      read = static_cast<char>(file[10 * kPage] + file[3000 * kPage]);
      const long faults = MinorFaults() - before;
      (void)read;
      return std::string(reinterpret_cast<const char*>(&faults), sizeof(faults));
    });
    long faults = -1;
    if (out.size() == sizeof(faults)) std::memcpy(&faults, out.data(), sizeof(faults));
    return faults;
  };
  EXPECT_EQ(faults_reading({}), 2);
  EXPECT_EQ(faults_reading(runs), 0);
  ::munmap(mapped, kFilePages * kPage);
}

TEST_F(PrefaultTest, RunsThisProcessDoesNotMapAreSkipped) {
  // An address range that was mapped and is not any more, and one that allows no access.
  void* gone =
      ::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  ::munmap(gone, 4 * kPage);
  void* none = ::mmap(nullptr, 4 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(none, MAP_FAILED);
  const uint64_t gone_at = reinterpret_cast<uintptr_t>(gone);
  const uint64_t none_at = reinterpret_cast<uintptr_t>(none);
  EXPECT_EQ(PopulatePages(
                {{gone_at, 4, true}, {gone_at, 4, false}, {none_at, 4, true}, {none_at, 4, false}}),
            0u);
  // The same call takes a run that is mapped (the control that it takes anything at all).
  EXPECT_EQ(PopulatePages({{reinterpret_cast<uintptr_t>(region_), 4, true}}), 4u);
  ::munmap(none, 4 * kPage);
}

TEST_F(PrefaultTest, StopsBetweenSlicesWhenARequestArrives) {
  const wire::PageRun all{reinterpret_cast<uintptr_t>(region_), kRegionSize / kPage, true};
  int asked = 0;
  // "A request arrived" from the second check on: one slice is taken, then no more.
  EXPECT_EQ(PopulatePages({all}, [&] { return ++asked > 1; }), kPopulateSlicePages);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(PopulatePages({all}, [] { return true; }), 0u);
  EXPECT_EQ(PopulatePages({all}), kRegionSize / kPage);  // never stopped: every slice
}

TEST_F(PrefaultTest, AsksWhetherToStopPerSliceNotPerRun) {
  // A learned set is mostly one-page runs: three slices' worth of them, every other page.
  ASSERT_GE(kRegionSize / kPage, 6 * kPopulateSlicePages);
  std::vector<wire::PageRun> runs;
  for (uint64_t i = 0; i < 3 * kPopulateSlicePages; ++i) {
    runs.push_back({reinterpret_cast<uintptr_t>(region_) + 2 * i * kPage, 1, true});
  }
  int asked = 0;
  EXPECT_EQ(PopulatePages(runs, [&] { return ++asked > 2; }), 2 * kPopulateSlicePages);
  EXPECT_EQ(asked, 3);  // before the first slice, then after each of the two taken
  asked = 0;
  EXPECT_EQ(PopulatePages(runs, [&] { return ++asked < 0; }), 3 * kPopulateSlicePages);
  EXPECT_EQ(asked, 3);
}

}  // namespace
}  // namespace zygo::agents::python
