// The per-window medians: windows by send time, part-filled ones skipped, bad input refused.
#include "bench/common/steadiness.h"

#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(Steadiness, TakesTheLowestAndHighestWindowMedian) {
  // Three one-second windows of four requests: medians (nearest rank) 1, 3 and 2 ms.
  std::vector<double> latency = {1, 1, 9, 1, 3, 3, 3, 0.5, 2, 2, 2, 2};
  std::vector<int64_t> sent;
  for (int i = 0; i < 12; ++i) sent.push_back(5 * kSecond + (i / 4) * kSecond + (i % 4) * 1000);
  absl::StatusOr<Steadiness> s = MeasureSteadiness(latency, sent, kSecond, 4);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->windows, 3);
  EXPECT_DOUBLE_EQ(s->lowest_p50_ms, 1);
  EXPECT_DOUBLE_EQ(s->highest_p50_ms, 3);
  EXPECT_DOUBLE_EQ(s->spread(), 3);
}

TEST(Steadiness, SkipsWindowsWithTooFewRequests) {
  // The last window has one slow request only: too few to count.
  std::vector<double> latency = {1, 1, 1, 1, 50};
  std::vector<int64_t> sent = {0, 1, 2, 3, 2 * kSecond};
  absl::StatusOr<Steadiness> s = MeasureSteadiness(latency, sent, kSecond, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->windows, 1);
  EXPECT_DOUBLE_EQ(s->highest_p50_ms, 1);
  EXPECT_FALSE(MeasureSteadiness(latency, sent, kSecond, 10).ok());
}

TEST(Steadiness, RefusesMismatchedOrEmptyInput) {
  EXPECT_FALSE(MeasureSteadiness({1, 2}, {0}, kSecond, 1).ok());
  EXPECT_FALSE(MeasureSteadiness({}, {}, kSecond, 1).ok());
  EXPECT_FALSE(MeasureSteadiness({1}, {0}, 0, 1).ok());
}

TEST(Steadiness, WindowHoldsFiftyRequestsWhenSparse) {
  EXPECT_EQ(SteadinessWindowNs(250), kSecond);
  EXPECT_EQ(SteadinessWindowNs(10), 5 * kSecond);
}

TEST(Steadiness, FormatsBothSides) {
  Steadiness zygo{12, 0.24, 0.29}, peer{12, 1.24, 1.29};
  EXPECT_EQ(FormatSteadiness("250/s open loop", kSecond, zygo, peer),
            "250/s open loop, 1 s windows: zygo 0.240-0.290 ms (1.21x, 12 windows), peer "
            "1.240-1.290 ms (1.04x, 12 windows)");
  EXPECT_EQ(FormatSteadiness("10 ms apart", kSecond, Steadiness{1, 0.5, 0.5}, peer),
            "10 ms apart, 1 s windows: zygo 0.500-0.500 ms (1.00x, 1 window), peer 1.240-1.290 ms "
            "(1.04x, 12 windows)");
}

}  // namespace
}  // namespace zygo::bench
