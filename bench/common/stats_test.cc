#include "bench/common/stats.h"

#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

std::vector<double> OneToHundred() {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  return v;
}

TEST(NearestRankPercentile, OneToHundredGivesTheRankItself) {
  std::vector<double> v = OneToHundred();
  EXPECT_EQ(NearestRankPercentile(v, 1), 1);
  EXPECT_EQ(NearestRankPercentile(v, 50), 50);
  EXPECT_EQ(NearestRankPercentile(v, 90), 90);
  EXPECT_EQ(NearestRankPercentile(v, 99), 99);
  EXPECT_EQ(NearestRankPercentile(v, 100), 100);
}

TEST(NearestRankPercentile, RoundsTheRankUpAndNeverInterpolates) {
  // Wikipedia's nearest-rank example: {15, 20, 35, 40, 50}.
  std::vector<double> v = {15, 20, 35, 40, 50};
  EXPECT_EQ(NearestRankPercentile(v, 5), 15);   // rank ceil(0.25) = 1
  EXPECT_EQ(NearestRankPercentile(v, 30), 20);  // rank ceil(1.5) = 2
  EXPECT_EQ(NearestRankPercentile(v, 40), 20);  // rank 2 exactly
  EXPECT_EQ(NearestRankPercentile(v, 50), 35);  // rank ceil(2.5) = 3
  EXPECT_EQ(NearestRankPercentile(v, 100), 50);
}

TEST(NearestRankPercentile, TwoHundredSamplesPickRank198ForP99) {
  // 0.99 * 200 is not exactly 198 in floating point; the rank must still be 198.
  std::vector<double> v;
  for (int i = 1; i <= 200; ++i) v.push_back(i);
  EXPECT_EQ(NearestRankPercentile(v, 99), 198);
  EXPECT_EQ(NearestRankPercentile(v, 50), 100);
  EXPECT_EQ(NearestRankPercentile(v, 90), 180);
}

TEST(Summarize, SortsAndSummarises) {
  absl::StatusOr<Summary> s = Summarize({5, 1, 4, 2, 3});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->count, 5);
  EXPECT_EQ(s->p50, 3);
  EXPECT_EQ(s->p90, 5);  // with five samples the tail percentiles are the maximum
  EXPECT_EQ(s->p99, 5);
  EXPECT_DOUBLE_EQ(s->mean, 3.0);
  EXPECT_EQ(s->min, 1);
  EXPECT_EQ(s->max, 5);
}

TEST(Summarize, OneSampleIsEveryPercentile) {
  absl::StatusOr<Summary> s = Summarize({7.5});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->p50, 7.5);
  EXPECT_EQ(s->p99, 7.5);
  EXPECT_DOUBLE_EQ(s->mean, 7.5);
}

TEST(Summarize, RejectsNoSamples) {
  absl::StatusOr<Summary> s = Summarize({});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zygo::bench
