// DnsResolver against a fake upstream on 127.0.0.1: what is answered, what is admitted, and
// that admission happens before the reply; the same for any-name mode (--net full), which
// admits nothing. Unprivileged. Failure and load: dns_resolver_robustness_test.cc.
#include "net/dns_resolver.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/allowlist.h"
#include "net/dns_message.h"
#include "net/dns_resolver_fixture.h"
#include "net/dns_test_util.h"

namespace zygo::net {
namespace {

using dnstest::AddressAnswer;
using dnstest::AnswerAddresses;
using dnstest::FakeAnswer;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(DnsResolverTest, AllowedNameIsResolvedAndAdmittedBeforeTheReply) {
  upstream_.Set("api.example.com", kDnsTypeA,
                Addresses({AddressAnswer("198.51.100.7", 60), AddressAnswer("203.0.113.9", 120)}));
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(0x4242, "api.example.com", kDnsTypeA);
  const int reply_sequence = sequence_++;
  ASSERT_TRUE(reply.ok()) << reply.status();

  EXPECT_EQ(reply->header.id, 0x4242);
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_TRUE(reply->header.is_response);
  EXPECT_FALSE(reply->header.truncated);
  ASSERT_EQ(reply->questions.size(), 1u);
  EXPECT_THAT(reply->questions[0].labels, ElementsAre("api", "example", "com"));
  EXPECT_EQ(reply->questions[0].qtype, kDnsTypeA);
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("198.51.100.7", "203.0.113.9"));
  EXPECT_EQ(reply->answers[0].ttl, 60u);
  EXPECT_EQ(reply->answers[1].ttl, 120u);

  const std::vector<Admission> admitted = admissions();
  ASSERT_EQ(admitted.size(), 2u);
  for (const Admission& a : admitted) {
    EXPECT_EQ(a.port, 443);
    EXPECT_LT(a.sequence, reply_sequence) << a.address;
    EXPECT_FALSE(a.reply_already_there) << a.address;
  }
  EXPECT_EQ(admitted[0].address, "198.51.100.7");
  EXPECT_EQ(admitted[0].ttl, 60u);
  EXPECT_EQ(admitted[1].address, "203.0.113.9");
  EXPECT_EQ(upstream_.QueriesFor("api.example.com"), 1);
}

TEST_F(DnsResolverTest, NameOffTheListGetsNxDomainWithoutUpstreamQuery) {
  upstream_.SetFallback(Addresses({AddressAnswer("198.51.100.66", 60)}));
  StartResolver();
  const std::vector<std::pair<std::string, uint16_t>> queries = {
      {"evil.example.net", kDnsTypeA},
      {"c2VjcmV0IGRhdGE.exfil.example.net", kDnsTypeAaaa},
      {"example.com", kDnsTypeA},
      {"evilapi.example.com", kDnsTypeA},
      {"api.example.com.evil.net", kDnsTypeA},
      {"cdn.example.com", kDnsTypeA},  // "*.cdn.example.com" does not cover its parent
      {"evil.example.net", 16},        // TXT: still NXDOMAIN, the name does not exist here
  };
  uint16_t id = 100;
  for (const auto& [name, qtype] : queries) {
    absl::StatusOr<DnsMessage> reply = Query(++id, name, qtype);
    ASSERT_TRUE(reply.ok()) << name << ": " << reply.status();
    EXPECT_EQ(reply->header.id, id);
    EXPECT_EQ(reply->header.rcode, kNxDomain) << name;
    EXPECT_THAT(reply->answers, IsEmpty()) << name;
  }
  EXPECT_EQ(upstream_.queries(), 0);
  EXPECT_THAT(admissions(), IsEmpty());
  EXPECT_EQ(resolver_->stats().not_allowed, queries.size());
  EXPECT_EQ(resolver_->stats().upstream_queries, 0u);
}

TEST_F(DnsResolverTest, WildcardAdmitsOnEveryAllowedPort) {
  upstream_.SetFallback(Addresses({AddressAnswer("203.0.113.80", 30)}));
  StartResolver();
  for (const std::string name : {"a.cdn.example.com", "deep.b.cdn.example.com"}) {
    absl::StatusOr<DnsMessage> reply = Query(7, name, kDnsTypeA);
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header.rcode, kNoError) << name;
    EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("203.0.113.80")) << name;
    EXPECT_EQ(upstream_.QueriesFor(name), 1) << name;
  }
  std::vector<uint16_t> ports;
  for (const Admission& a : admissions()) ports.push_back(a.port);
  EXPECT_THAT(ports, ElementsAre(80, 443, 80, 443));
}

TEST_F(DnsResolverTest, NamesAreCaseInsensitiveAndTheQuestionIsEchoedAsSent) {
  upstream_.Set("api.example.com", kDnsTypeA, Addresses({AddressAnswer("198.51.100.7", 60)}));
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(9, "API.Example.COM.", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(reply->questions[0].labels, ElementsAre("API", "Example", "COM"));
  EXPECT_THAT(reply->answers[0].labels, ElementsAre("API", "Example", "COM"));
  EXPECT_EQ(upstream_.QueriesFor("api.example.com"), 1);
}

TEST_F(DnsResolverTest, PrivateAndSpecialAnswersAreDropped) {
  upstream_.Set(
      "mixed.example.com", kDnsTypeA,
      Addresses({AddressAnswer("10.0.0.5", 60), AddressAnswer("198.51.100.8", 60),
                 AddressAnswer("169.254.169.254", 60), AddressAnswer("198.51.100.8", 60)}));
  upstream_.Set(
      "mapped.example.com", kDnsTypeAaaa,
      Addresses({AddressAnswer("::ffff:192.168.1.1", 60), AddressAnswer("2606:4700:4700::1111", 60),
                 AddressAnswer("fd00::1", 60)}));
  StartResolver();

  absl::StatusOr<DnsMessage> reply = Query(1, "mixed.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("198.51.100.8"));  // and deduplicated

  reply = Query(2, "mapped.example.com", kDnsTypeAaaa);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("2606:4700:4700::1111"));

  std::vector<std::string> admitted;
  for (const Admission& a : admissions()) admitted.push_back(a.address);
  EXPECT_THAT(admitted, ElementsAre("198.51.100.8", "2606:4700:4700::1111"));
  EXPECT_EQ(resolver_->stats().addresses_refused, 4u);
}

// Decision: when every address is refused the reply is NOERROR with no answers (NODATA),
// not NXDOMAIN: the name exists, it just has no address the sandbox may use, and an
// NXDOMAIN for one type would make stub resolvers give up on the other type too.
TEST_F(DnsResolverTest, OnlyRefusedAnswersGiveAnEmptyNoError) {
  upstream_.Set("private.example.com", kDnsTypeA,
                Addresses({AddressAnswer("10.0.0.5", 60), AddressAnswer("192.168.1.1", 60),
                           AddressAnswer("127.0.0.1", 60)}));
  upstream_.Set("private.example.com", kDnsTypeAaaa,
                Addresses({AddressAnswer("::ffff:169.254.169.254", 60), AddressAnswer("::1", 60),
                           AddressAnswer("fe80::1", 60)}));
  StartResolver();
  for (uint16_t qtype : {kDnsTypeA, kDnsTypeAaaa}) {
    absl::StatusOr<DnsMessage> reply = Query(3, "private.example.com", qtype);
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header.rcode, kNoError);
    EXPECT_THAT(reply->answers, IsEmpty());
  }
  EXPECT_THAT(admissions(), IsEmpty());
}

TEST_F(DnsResolverTest, AaaaWorks) {
  upstream_.Set("v6.example.com", kDnsTypeAaaa,
                Addresses({AddressAnswer("2606:4700:4700::1111", 45),
                           AddressAnswer("2a00:1450:4001:80b::200e", 45)}));
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(0xAAAA, "v6.example.com", kDnsTypeAaaa);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.id, 0xAAAA);
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(AnswerAddresses(*reply),
              ElementsAre("2606:4700:4700::1111", "2a00:1450:4001:80b::200e"));
  EXPECT_EQ(reply->answers[0].type, kDnsTypeAaaa);
  EXPECT_EQ(admissions().size(), 2u);

  // The name has only AAAA upstream: A gets NOERROR without answers (c-ares' ENODATA).
  reply = Query(0xAAAB, "v6.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(reply->answers, IsEmpty());
  EXPECT_EQ(admissions().size(), 2u);
}

TEST_F(DnsResolverTest, TtlIsCappedAndFloored) {
  upstream_.Set(
      "ttl.example.com", kDnsTypeA,
      Addresses({AddressAnswer("198.51.100.20", 86400), AddressAnswer("198.51.100.21", 0)}));
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(5, "ttl.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->answers.size(), 2u);
  EXPECT_EQ(reply->answers[0].ttl, 300u);
  EXPECT_EQ(reply->answers[1].ttl, 1u);
  const std::vector<Admission> admitted = admissions();
  ASSERT_EQ(admitted.size(), 2u);
  EXPECT_EQ(admitted[0].ttl, 300u);
  EXPECT_EQ(admitted[1].ttl, 1u);
}

// --net full: no allowlist and no admit (Create refuses either; a call to the empty admit
// would throw), so the fixture's are removed.
void AnyName(DnsResolverOptions& o) {
  o.names = DnsNamePolicy::kAnyName;
  o.allowlist = Allowlist();
  o.admit = nullptr;
}

TEST_F(DnsResolverTest, AnyNameModeForwardsNamesOffEveryList) {
  upstream_.Set("anything.example.org", kDnsTypeA, Addresses({AddressAnswer("198.51.100.30", 60)}));
  upstream_.Set("v6.example.net", kDnsTypeAaaa,
                Addresses({AddressAnswer("2606:4700:4700::1111", 60)}));
  StartResolver(AnyName);
  absl::StatusOr<DnsMessage> reply = Query(1, "Anything.Example.org", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("198.51.100.30"));
  reply = Query(2, "v6.example.net", kDnsTypeAaaa);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("2606:4700:4700::1111"));
  reply = Query(3, "gone.example.org", kDnsTypeA);  // the fake answers NXDOMAIN
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNxDomain);
  EXPECT_EQ(upstream_.QueriesFor("anything.example.org"), 1);
  EXPECT_EQ(upstream_.QueriesFor("v6.example.net"), 1);
  EXPECT_EQ(upstream_.QueriesFor("gone.example.org"), 1);

  // Still answered here, without an upstream query: not a host name, the root, other types.
  for (const char* name : {"evil name.example.org", "."}) {
    reply = Query(4, name, kDnsTypeA);
    ASSERT_TRUE(reply.ok()) << name << ": " << reply.status();
    EXPECT_EQ(reply->header.rcode, kNxDomain) << name;
  }
  reply = Query(5, "anything.example.org", 16);  // TXT
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);
  EXPECT_THAT(reply->answers, IsEmpty());
  EXPECT_EQ(upstream_.queries(), 3);

  const DnsResolverStats stats = resolver_->stats();
  EXPECT_EQ(stats.upstream_queries, 3u);
  EXPECT_EQ(stats.not_host_name, 2u);
  EXPECT_EQ(stats.not_allowed, 0u);
  EXPECT_EQ(stats.admit_failures, 0u);
  EXPECT_THAT(admissions(), IsEmpty());
}

// Rebinding protection does not depend on the allowlist.
TEST_F(DnsResolverTest, AnyNameModeStillDropsRefusedAnswers) {
  upstream_.Set("rebind.example.org", kDnsTypeA, Addresses({AddressAnswer("10.0.0.5", 60)}));
  upstream_.Set("mixed.example.org", kDnsTypeA,
                Addresses({AddressAnswer("169.254.169.254", 60), AddressAnswer("198.51.100.8", 60),
                           AddressAnswer("127.0.0.1", 60)}));
  upstream_.Set("mixed.example.org", kDnsTypeAaaa,
                Addresses({AddressAnswer("::ffff:192.168.1.1", 60), AddressAnswer("fd00::1", 60),
                           AddressAnswer("2606:4700:4700::1111", 60)}));
  StartResolver(AnyName);
  absl::StatusOr<DnsMessage> reply = Query(1, "rebind.example.org", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNoError);  // NODATA, as with an allowlist
  EXPECT_THAT(reply->answers, IsEmpty());
  EXPECT_EQ(upstream_.QueriesFor("rebind.example.org"), 1);  // it was asked, and dropped
  reply = Query(2, "mixed.example.org", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("198.51.100.8"));
  reply = Query(3, "mixed.example.org", kDnsTypeAaaa);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("2606:4700:4700::1111"));
  EXPECT_EQ(resolver_->stats().addresses_refused, 5u);
  EXPECT_THAT(admissions(), IsEmpty());
}

TEST_F(DnsResolverTest, AnyNameModeKeepsTheInFlightCapAndTheRateLimit) {
  FakeAnswer slow = Addresses({AddressAnswer("203.0.113.51", 60)});
  slow.delay = absl::Milliseconds(500);
  upstream_.SetFallback(slow);
  StartResolver([](DnsResolverOptions& o) {
    AnyName(o);
    o.max_in_flight = 2;
    o.max_packets_per_second = 10;
  });
  for (uint16_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(client_->Send(*BuildDnsQuery(i, absl::StrCat("q", i, ".example.org"), 1)).ok());
  }
  int servfail = 0;
  int answered = 0;
  while (std::optional<std::vector<uint8_t>> bytes = client_->Receive(absl::Seconds(1))) {
    const uint8_t rcode = ParseDnsMessage(*bytes)->header.rcode;
    servfail += rcode == kServFail;
    answered += rcode == kNoError;
  }
  const DnsResolverStats stats = resolver_->stats();
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(upstream_.queries(), 2);
  EXPECT_EQ(static_cast<uint64_t>(servfail), stats.over_capacity);
  EXPECT_GE(servfail + answered, 10);
  EXPECT_LE(servfail + answered, 15);
  EXPECT_GE(stats.rate_limited, 25u);
}

}  // namespace
}  // namespace zygo::net
