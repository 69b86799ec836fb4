#include "supervisor/learned_prefault.h"

#include <gtest/gtest.h>

#include <vector>

#include "agents/wire/channel.h"
#include "agents/wire/messages.h"

namespace zygo::supervisor {
namespace {

using wire::PageRun;

constexpr uint64_t kPage = wire::kPageBytes;

TEST(MergePageRunsTest, SortsAndJoinsRunsOfTheSameKind) {
  const std::vector<PageRun> merged = MergePageRuns({{10 * kPage, 2, true},
                                                     {2 * kPage, 3, true},
                                                     {5 * kPage, 1, true},   // 2..5 adjacent
                                                     {11 * kPage, 4, true},  // overlaps 10..11
                                                     {100 * kPage, 1, false},
                                                     {101 * kPage, 1, false}},  // read runs
                                                    1000);
  const std::vector<PageRun> want = {
      {2 * kPage, 4, true}, {10 * kPage, 5, true}, {100 * kPage, 2, false}};
  EXPECT_EQ(merged, want);
}

TEST(MergePageRunsTest, CutsToTheBudgetKeepingLowAddresses) {
  const std::vector<PageRun> merged =
      MergePageRuns({{100 * kPage, 10, true}, {10 * kPage, 10, true}}, 15);
  const std::vector<PageRun> want = {{10 * kPage, 10, true}, {100 * kPage, 5, true}};
  EXPECT_EQ(merged, want);
  EXPECT_TRUE(MergePageRuns({{10 * kPage, 10, true}}, 0).empty());
}

TEST(LearnedPrefaultTest, LearnsFromTheFirstReportsOnly) {
  LearnedPrefault prefault(/*memory_limit_bytes=*/0);
  EXPECT_TRUE(prefault.WantsReport());
  EXPECT_EQ(prefault.frame(), nullptr);
  prefault.Learn({{4 * kPage, 1, true}});
  ASSERT_NE(prefault.frame(), nullptr);
  prefault.Learn({{5 * kPage, 1, true}});
  EXPECT_FALSE(prefault.WantsReport());
  prefault.Learn({{50 * kPage, 1, true}});  // a third report: not asked for, not taken

  wire::ReceivedFrame received;
  received.frame = *prefault.frame();
  absl::StatusOr<wire::PrefaultMessage> decoded = wire::DecodePrefault(received);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const std::vector<PageRun> want = {{4 * kPage, 2, true}};
  EXPECT_EQ(decoded->runs, want);
}

TEST(LearnedPrefaultTest, BudgetIsAQuarterOfTheMemoryLimitAtMost8MiB) {
  EXPECT_EQ(LearnedPrefault(0).max_pages(), (8u << 20) / kPage);
  EXPECT_EQ(LearnedPrefault(int64_t{1} << 30).max_pages(), (8u << 20) / kPage);
  EXPECT_EQ(LearnedPrefault(16 << 20).max_pages(), (4u << 20) / kPage);
  // A report far over the budget is cut to it.
  LearnedPrefault small(16 << 20);
  small.Learn({{kPage, 100000, true}});
  wire::ReceivedFrame received;
  received.frame = *small.frame();
  absl::StatusOr<wire::PrefaultMessage> decoded = wire::DecodePrefault(received);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->runs.size(), 1u);
  EXPECT_EQ(decoded->runs[0].pages, (4u << 20) / kPage);
}

}  // namespace
}  // namespace zygo::supervisor
