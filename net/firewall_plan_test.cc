#include "net/firewall_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/ip_address.h"

namespace zygo::net {
namespace {

using ::testing::ElementsAre;

IpAddress Ip(const char* text) { return IpAddress::Parse(text).value(); }

TEST(FirewallPlanTest, ChecksAndNormalizesAddresses) {
  EXPECT_FALSE(FirewallPlan::Egress(Ip("0.0.0.0"), {}).ok());
  EXPECT_FALSE(FirewallPlan::Egress(Ip("224.0.0.1"), {}).ok());
  EXPECT_FALSE(FirewallPlan::Egress(Ip("::"), {}).ok());
  EXPECT_FALSE(FirewallPlan::Egress(Ip("127.0.0.53"), {Ip("ff02::1")}).ok());
  EXPECT_FALSE(FirewallPlan::Full(Ip("255.255.255.255"), {}).ok());
  const FirewallPlan plan =
      FirewallPlan::Egress(Ip("::ffff:127.0.0.53"),
                           {Ip("203.0.113.1"), Ip("::ffff:203.0.113.1"), Ip("2001:db8::1")})
          .value();
  EXPECT_EQ(plan.mode(), FirewallMode::kEgress);
  EXPECT_EQ(plan.resolver().value(), Ip("127.0.0.53"));
  EXPECT_THAT(plan.host_addresses(), ElementsAre(Ip("203.0.113.1"), Ip("2001:db8::1")));
  EXPECT_FALSE(FirewallPlan::Full(std::nullopt, {}).value().resolver().has_value());
  // zygo-net's full mode names its resolver on the sandbox's loopback.
  const FirewallPlan full = FirewallPlan::Full(Ip("127.0.0.53"), {}).value();
  EXPECT_EQ(full.mode(), FirewallMode::kFull);
  EXPECT_EQ(full.resolver().value(), Ip("127.0.0.53"));
}

}  // namespace
}  // namespace zygo::net
