#include "supervisor/script_bytecode_cache.h"

#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

TEST(ScriptBytecodeCacheTest, KeepsTheFirstAndEvictsTheOldestBeyondTheBudget) {
  ScriptBytecodeCache cache(/*max_bytes=*/30);
  EXPECT_FALSE(cache.Find("a").has_value());
  cache.Add("a", "0123456789");  // 11 bytes with its key
  cache.Add("a", "other");       // a second copy for the same digest is ignored
  ASSERT_TRUE(cache.Find("a").has_value());
  EXPECT_EQ(*cache.Find("a"), "0123456789");
  cache.Add("b", "0123456789");
  EXPECT_EQ(cache.bytes(), 22u);
  cache.Add("c", "0123456789");  // 33 > 30: "a" goes
  EXPECT_FALSE(cache.Find("a").has_value());
  EXPECT_TRUE(cache.Find("b").has_value());
  EXPECT_TRUE(cache.Find("c").has_value());
  EXPECT_EQ(cache.bytes(), 22u);
  cache.Add("d", std::string(40, 'x'));  // larger than the whole budget: not kept
  EXPECT_FALSE(cache.Find("d").has_value());
  EXPECT_TRUE(cache.Find("b").has_value());
}

}  // namespace
}  // namespace zygo::supervisor
