// The --dump CSV: one line per request, the peer's phase columns empty, lengths checked.
#include "bench/warm/request_dump.h"

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

TEST(RequestDump, OneLinePerRequestWithTheSupervisorsPhases) {
  OpenLoopResult zygo;
  zygo.latency_ms = {0.3, 1.25};
  zygo.sent_ns = {2'000'000'000, 2'004'000'000};
  PhaseSamples phases{{700, 710}, {5, 6}, {90, 900}, {7, 8}, {170, 1000}};
  OpenLoopResult peer;
  peer.latency_ms = {1.75};
  peer.sent_ns = {3'500'000'000};

  absl::StatusOr<std::string> csv = FormatRequestDump(
      {{"250/s open loop", "zygo", &zygo, &phases}, {"250/s open loop", "peer", &peer, nullptr}},
      1'000'000'000);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "schedule,who,request,sent_s,latency_ms,fork_us,admit_us,run_us,reply_us,total_us\n"
            "250/s open loop,zygo,1,1.000000,0.300,700,5,90,7,170\n"
            "250/s open loop,zygo,2,1.004000,1.250,710,6,900,8,1000\n"
            "250/s open loop,peer,1,2.500000,1.750,,,,,\n");
}

TEST(RequestDump, RefusesTimingsThatDoNotLineUp) {
  OpenLoopResult zygo;
  zygo.latency_ms = {0.3, 0.4};
  zygo.sent_ns = {1};
  absl::StatusOr<std::string> csv = FormatRequestDump({{"s", "zygo", &zygo, nullptr}}, 0);
  EXPECT_FALSE(csv.ok());

  zygo.sent_ns = {1, 2};
  PhaseSamples one{{1}, {1}, {1}, {1}, {1}};
  csv = FormatRequestDump({{"s", "zygo", &zygo, &one}}, 0);
  EXPECT_FALSE(csv.ok());
  EXPECT_TRUE(FormatRequestDump({{"s", "zygo", &zygo, nullptr}}, 0).ok());
}

}  // namespace
}  // namespace zygo::bench
