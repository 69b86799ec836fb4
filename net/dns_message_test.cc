// Parser and builder tests: well-formed round trips, every malformation the resolver must
// survive, and a seeded random-bytes loop.
#include "net/dns_message.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::net {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<uint8_t> Header(uint16_t id, uint16_t qd, uint16_t an = 0, uint16_t ns = 0,
                            uint16_t ar = 0, uint8_t flags1 = 0x01) {
  return {static_cast<uint8_t>(id >> 8),
          static_cast<uint8_t>(id),
          flags1,
          0,
          static_cast<uint8_t>(qd >> 8),
          static_cast<uint8_t>(qd),
          static_cast<uint8_t>(an >> 8),
          static_cast<uint8_t>(an),
          static_cast<uint8_t>(ns >> 8),
          static_cast<uint8_t>(ns),
          static_cast<uint8_t>(ar >> 8),
          static_cast<uint8_t>(ar)};
}

void Append(std::vector<uint8_t>& v, std::initializer_list<uint8_t> bytes) {
  v.insert(v.end(), bytes.begin(), bytes.end());
}

void AppendLabel(std::vector<uint8_t>& v, const std::string& label) {
  v.push_back(static_cast<uint8_t>(label.size()));
  v.insert(v.end(), label.begin(), label.end());
}

std::vector<uint8_t> Query(uint16_t id, const std::string& name, uint16_t qtype) {
  auto q = BuildDnsQuery(id, name, qtype);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : std::vector<uint8_t>{};
}

TEST(DnsMessageTest, ParsesQueryBuiltByBuildDnsQuery) {
  auto query = ParseDnsQuery(Query(0xBEEF, "Api.Example.COM.", kDnsTypeAaaa));
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->header.id, 0xBEEF);
  EXPECT_TRUE(query->header.recursion_desired);
  EXPECT_FALSE(query->header.is_response);
  EXPECT_THAT(query->question.labels, ElementsAre("Api", "Example", "COM"));
  EXPECT_EQ(query->question.qtype, kDnsTypeAaaa);
  EXPECT_EQ(query->question.qclass, kDnsClassIn);
  EXPECT_FALSE(query->has_edns);
  EXPECT_EQ(query->MaxReplySize(), 512u);
}

TEST(DnsMessageTest, NormalizeLowercasesAndRejectsOddBytes) {
  EXPECT_EQ(*NormalizeDnsName({"Api", "EXAMPLE", "com"}), "api.example.com");
  EXPECT_EQ(*NormalizeDnsName({"_srv", "a-b", "c9"}), "_srv.a-b.c9");
  EXPECT_EQ(*NormalizeDnsName({}), "");
  EXPECT_FALSE(NormalizeDnsName({"a.b", "com"}).ok());
  EXPECT_FALSE(NormalizeDnsName({"a b"}).ok());
  EXPECT_FALSE(NormalizeDnsName({std::string("a\0b", 3)}).ok());
  EXPECT_FALSE(NormalizeDnsName({"*", "example", "com"}).ok());
  EXPECT_FALSE(NormalizeDnsName({"\xc3\xa9"}).ok());
}

TEST(DnsMessageTest, FollowsBackwardCompressionPointers) {
  // Question "a.example.com" at 12, then an answer owned by "www" + pointer to "example.com".
  std::vector<uint8_t> p = Header(1, 1, 1, 0, 0, 0x81);
  AppendLabel(p, "a");        // offset 12
  AppendLabel(p, "example");  // offset 14
  AppendLabel(p, "com");
  Append(p, {0, 0, 1, 0, 1});
  AppendLabel(p, "www");
  Append(p, {0xC0, 14, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4});
  auto message = ParseDnsMessage(p);
  ASSERT_TRUE(message.ok()) << message.status();
  ASSERT_EQ(message->answers.size(), 1u);
  EXPECT_THAT(message->answers[0].labels, ElementsAre("www", "example", "com"));
  EXPECT_EQ(message->answers[0].ttl, 60u);
  EXPECT_EQ(message->answers[0].rdata, std::string("\x01\x02\x03\x04", 4));
}

TEST(DnsMessageTest, RejectsCompressionLoops) {
  // A pointer to itself.
  std::vector<uint8_t> self = Header(1, 1);
  Append(self, {0xC0, 12, 0, 1, 0, 1});
  EXPECT_THAT(std::string(ParseDnsQuery(self).status().message()), HasSubstr("compression"));

  // Two pointers pointing at each other: 12 -> 14 -> 12.
  std::vector<uint8_t> pair = Header(1, 1);
  Append(pair, {0xC0, 14, 0xC0, 12, 0, 1, 0, 1});
  EXPECT_FALSE(ParseDnsQuery(pair).ok());

  // A label, then a pointer back to that label: "a.a.a.a..." forever without the rule.
  std::vector<uint8_t> label_loop = Header(1, 1);
  Append(label_loop, {1, 'a', 0xC0, 12, 0, 1, 0, 1});
  EXPECT_FALSE(ParseDnsQuery(label_loop).ok());

  // A forward pointer.
  std::vector<uint8_t> forward = Header(1, 1);
  Append(forward, {0xC0, 20, 0, 1, 0, 1, 0, 0, 0});
  EXPECT_FALSE(ParseDnsQuery(forward).ok());

  // A pointer past the end.
  std::vector<uint8_t> past = Header(1, 1);
  Append(past, {0xFF, 0xFF, 0, 1, 0, 1});
  EXPECT_FALSE(ParseDnsQuery(past).ok());
}

TEST(DnsMessageTest, RejectsLongLabelsAndNames) {
  std::vector<uint8_t> long_label = Header(1, 1);
  AppendLabel(long_label, std::string(63, 'a'));
  Append(long_label, {0, 0, 1, 0, 1});
  EXPECT_TRUE(ParseDnsQuery(long_label).ok());
  // Length 64 has the 0x40 bit: an extended label type, which no one may send.
  long_label = Header(1, 1);
  long_label.push_back(64);
  long_label.insert(long_label.end(), 64, 'a');
  Append(long_label, {0, 0, 1, 0, 1});
  EXPECT_THAT(std::string(ParseDnsQuery(long_label).status().message()), HasSubstr("63 octets"));

  // 4 labels of 63 = 4 * 64 + 1 = 257 octets > 255.
  std::vector<uint8_t> long_name = Header(1, 1);
  for (int i = 0; i < 4; ++i) AppendLabel(long_name, std::string(63, 'b'));
  Append(long_name, {0, 0, 1, 0, 1});
  EXPECT_THAT(std::string(ParseDnsQuery(long_name).status().message()), HasSubstr("255 octets"));
  // 3 * 64 + 62 + 1 = 255 exactly is fine.
  std::vector<uint8_t> max_name = Header(1, 1);
  for (int i = 0; i < 3; ++i) AppendLabel(max_name, std::string(63, 'b'));
  AppendLabel(max_name, std::string(61, 'b'));
  Append(max_name, {0, 0, 1, 0, 1});
  EXPECT_TRUE(ParseDnsQuery(max_name).ok()) << ParseDnsQuery(max_name).status();

  EXPECT_FALSE(BuildDnsQuery(1, std::string(64, 'a') + ".com", kDnsTypeA).ok());
  EXPECT_FALSE(BuildDnsQuery(1, "a..com", kDnsTypeA).ok());
}

TEST(DnsMessageTest, RejectsTruncatedPackets) {
  const std::vector<uint8_t> full = Query(7, "api.example.com", kDnsTypeA);
  EXPECT_TRUE(ParseDnsQuery(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    absl::Span<const uint8_t> prefix(full.data(), n);
    EXPECT_FALSE(ParseDnsQuery(prefix).ok()) << n;
    EXPECT_EQ(ParseDnsHeader(prefix).has_value(), n >= 12) << n;
  }
  std::vector<uint8_t> trailing = full;
  trailing.push_back(0);
  EXPECT_FALSE(ParseDnsQuery(trailing).ok());
}

TEST(DnsMessageTest, QueryNeedsExactlyOneQuestion) {
  std::vector<uint8_t> none = Header(1, 0);
  EXPECT_THAT(std::string(ParseDnsQuery(none).status().message()), HasSubstr("exactly one"));
  ASSERT_TRUE(ParseDnsHeader(none).has_value());

  std::vector<uint8_t> five = Header(1, 5);
  for (int i = 0; i < 5; ++i) {
    AppendLabel(five, "a");
    Append(five, {0, 0, 1, 0, 1});
  }
  ASSERT_TRUE(ParseDnsMessage(five).ok());
  EXPECT_THAT(std::string(ParseDnsQuery(five).status().message()), HasSubstr("exactly one"));

  // qdcount claims 5 but only one is there.
  std::vector<uint8_t> lying = Header(1, 5);
  AppendLabel(lying, "a");
  Append(lying, {0, 0, 1, 0, 1});
  EXPECT_FALSE(ParseDnsQuery(lying).ok());
}

TEST(DnsMessageTest, RejectsResponsesAndAnswerRecordsInQueries) {
  std::vector<uint8_t> response = Query(1, "a.com", kDnsTypeA);
  response[2] |= 0x80;
  EXPECT_FALSE(ParseDnsQuery(response).ok());
  EXPECT_TRUE(ParseDnsMessage(response).ok());
}

TEST(DnsMessageTest, ReadsEdnsOffer) {
  std::vector<uint8_t> p = Query(9, "a.com", kDnsTypeA);
  p[11] = 1;                                            // arcount
  Append(p, {0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0});  // OPT, 4096 bytes
  auto query = ParseDnsQuery(p);
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_TRUE(query->has_edns);
  EXPECT_EQ(query->edns_udp_size, 4096);
  EXPECT_EQ(query->MaxReplySize(), kDnsMaxEdnsReplySize);

  std::vector<uint8_t> two = p;
  two[11] = 2;
  Append(two, {0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0});
  EXPECT_FALSE(ParseDnsQuery(two).ok());

  auto reply = ParseDnsMessage(BuildDnsReply(*query, DnsRcode::kNoError, {}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->additionals.size(), 1u);
  EXPECT_EQ(reply->additionals[0].type, kDnsTypeOpt);
}

TEST(DnsMessageTest, ReplyEchoesQuestionAndCompressesOwners) {
  auto query = ParseDnsQuery(Query(0x1234, "Api.Example.com", kDnsTypeA));
  ASSERT_TRUE(query.ok());
  std::vector<DnsAnswer> answers = {{kDnsTypeA, 60, std::string("\x01\x02\x03\x04", 4)},
                                    {kDnsTypeA, 30, std::string("\x05\x06\x07\x08", 4)}};
  const std::vector<uint8_t> bytes = BuildDnsReply(*query, DnsRcode::kNoError, answers);
  auto reply = ParseDnsMessage(bytes);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.id, 0x1234);
  EXPECT_TRUE(reply->header.is_response);
  EXPECT_TRUE(reply->header.recursion_desired);
  EXPECT_TRUE(reply->header.recursion_available);
  EXPECT_FALSE(reply->header.truncated);
  EXPECT_EQ(reply->header.rcode, 0);
  ASSERT_EQ(reply->questions.size(), 1u);
  EXPECT_THAT(reply->questions[0].labels, ElementsAre("Api", "Example", "com"));
  ASSERT_EQ(reply->answers.size(), 2u);
  EXPECT_THAT(reply->answers[1].labels, ElementsAre("Api", "Example", "com"));
  EXPECT_EQ(reply->answers[1].ttl, 30u);
  EXPECT_EQ(reply->answers[1].rdata, answers[1].rdata);
  // 12 header + 17 name + 4 + 2 * (2 + 10 + 4).
  EXPECT_EQ(bytes.size(), 12u + 17 + 4 + 2 * 16);
}

TEST(DnsMessageTest, ReplyKeepsWithin512BytesWithoutEdns) {
  auto query = ParseDnsQuery(Query(1, "many.example.com", kDnsTypeAaaa));
  ASSERT_TRUE(query.ok());
  std::vector<DnsAnswer> answers(100, DnsAnswer{kDnsTypeAaaa, 60, std::string(16, 'x')});
  const size_t fit = DnsAnswersThatFit(*query, answers);
  const std::vector<uint8_t> bytes = BuildDnsReply(*query, DnsRcode::kNoError, answers);
  EXPECT_LE(bytes.size(), 512u);
  EXPECT_GT(bytes.size() + 28, 512u);  // one more would not have fit
  auto reply = ParseDnsMessage(bytes);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->answers.size(), fit);
  EXPECT_FALSE(reply->header.truncated);
}

TEST(DnsMessageTest, HeaderOnlyReply) {
  DnsHeader header;
  header.id = 0xABCD;
  header.opcode = 2;
  header.recursion_desired = true;
  header.qdcount = 3;
  auto reply = ParseDnsMessage(BuildDnsHeaderOnlyReply(header, DnsRcode::kNotImp));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header.id, 0xABCD);
  EXPECT_EQ(reply->header.opcode, 2);
  EXPECT_EQ(reply->header.rcode, 4);
  EXPECT_TRUE(reply->header.is_response);
  EXPECT_EQ(reply->header.qdcount, 0);
}

// Random packets, and random mutations of a valid query, never crash the parser (run it
// under --config=asan to make that mean something) and whatever parses can be answered.
TEST(DnsMessageTest, SurvivesRandomBytes) {
  std::mt19937 rng(20240611);
  const std::vector<uint8_t> valid = Query(42, "api.example.com", kDnsTypeA);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> p;
    if (i % 2 == 0) {
      p.resize(rng() % 600);
      for (uint8_t& b : p) b = static_cast<uint8_t>(rng());
    } else {
      p = valid;
      const int flips = 1 + rng() % 6;
      for (int f = 0; f < flips; ++f) p[rng() % p.size()] = static_cast<uint8_t>(rng());
      if (rng() % 4 == 0) p.resize(rng() % (p.size() + 1));
    }
    ParseDnsHeader(p);
    ParseDnsMessage(p).IgnoreError();
    auto query = ParseDnsQuery(p);
    if (!query.ok()) continue;
    ++parsed;
    (void)NormalizeDnsName(query->question.labels);
    auto reply = ParseDnsMessage(BuildDnsReply(*query, DnsRcode::kNxDomain, {}));
    EXPECT_TRUE(reply.ok()) << reply.status();
  }
  EXPECT_GT(parsed, 0);  // the mutations must reach past the header sometimes
}

}  // namespace
}  // namespace zygo::net
