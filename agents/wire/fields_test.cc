// Strict parsing of tag-length-value payload fields.
#include "agents/wire/fields.h"

#include <gtest/gtest.h>

#include <string>

namespace zygo::wire {
namespace {

constexpr FieldSpec kSchema[] = {
    {1, FieldKind::kBytes, 5, true},
    {2, FieldKind::kU64, 8, false},
};

TEST(FieldsTest, RoundTrip) {
  const std::string payload = FieldWriter().AddBytes(1, "hey").AddU64(2, 1ull << 40).Finish();
  absl::StatusOr<FieldReader> reader = FieldReader::Parse(payload, kSchema);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->Bytes(1), "hey");
  EXPECT_EQ(reader->U64(2), 1ull << 40);
  EXPECT_EQ(reader->U64(1), std::nullopt);  // Wrong kind.
}

TEST(FieldsTest, OptionalFieldMayBeAbsent) {
  absl::StatusOr<FieldReader> reader =
      FieldReader::Parse(FieldWriter().AddBytes(1, "").Finish(), kSchema);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->U64(2), std::nullopt);
}

TEST(FieldsTest, RefusesMalformedPayloads) {
  auto parse = [](const std::string& payload) { return FieldReader::Parse(payload, kSchema); };
  EXPECT_FALSE(parse("").ok());                                             // missing required
  EXPECT_FALSE(parse(FieldWriter().AddBytes(1, "toolong").Finish()).ok());  // over max_len
  EXPECT_FALSE(parse(FieldWriter().AddBytes(1, "a").AddU64(3, 1).Finish()).ok());         // unknown
  EXPECT_FALSE(parse(FieldWriter().AddU64(2, 1).AddBytes(1, "a").Finish()).ok());         // order
  EXPECT_FALSE(parse(FieldWriter().AddBytes(1, "a").AddBytes(1, "b").Finish()).ok());     // dup
  EXPECT_FALSE(parse(FieldWriter().AddBytes(1, "a").AddBytes(2, "1234").Finish()).ok());  // u64 len
  std::string truncated = FieldWriter().AddBytes(1, "abc").Finish();
  truncated.pop_back();
  EXPECT_FALSE(parse(truncated).ok());
  EXPECT_FALSE(parse(FieldWriter().AddBytes(1, "a").Finish() + "\x02").ok());  // trailing bytes
  std::string huge_len = FieldWriter().AddBytes(1, "a").Finish();
  huge_len[5] = '\x7f';
  EXPECT_FALSE(parse(huge_len).ok());
}

}  // namespace
}  // namespace zygo::wire
