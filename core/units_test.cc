#include "core/units.h"

#include "gtest/gtest.h"

namespace zygo::core {
namespace {

TEST(ParseByteSize, AcceptsDockerSuffixes) {
  EXPECT_EQ(*ParseByteSize("256m"), 256LL << 20);
  EXPECT_EQ(*ParseByteSize("1G"), 1LL << 30);
  EXPECT_EQ(*ParseByteSize("512k"), 512LL << 10);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("64mb"), 64LL << 20);
}

TEST(ParseByteSize, RejectsBadInputWithTheReason) {
  auto bad_unit = ParseByteSize("12q");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_NE(bad_unit.status().message().find("unknown unit 'q'"), std::string::npos);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("0").ok());
  EXPECT_FALSE(ParseByteSize("-5m").ok());
  EXPECT_FALSE(ParseByteSize("99999999999999999g").ok());
}

TEST(ParseDurationMs, AcceptsUnits) {
  EXPECT_EQ(*ParseDurationMs("30"), 30'000);
  EXPECT_EQ(*ParseDurationMs("1500ms"), 1500);
  EXPECT_EQ(*ParseDurationMs("0.5s"), 500);
  EXPECT_EQ(*ParseDurationMs("2m"), 120'000);
  EXPECT_FALSE(ParseDurationMs("0").ok());
  EXPECT_FALSE(ParseDurationMs("5x").ok());
}

TEST(ParsePositiveDecimal, AcceptsAndRejects) {
  EXPECT_DOUBLE_EQ(*ParsePositiveDecimal("0.5"), 0.5);
  EXPECT_FALSE(ParsePositiveDecimal("-1").ok());
  EXPECT_FALSE(ParsePositiveDecimal("abc").ok());
  EXPECT_FALSE(ParsePositiveDecimal("0").ok());
}

}  // namespace
}  // namespace zygo::core
