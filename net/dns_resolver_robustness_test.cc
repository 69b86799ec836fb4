// DnsResolver against a fake upstream on 127.0.0.1 under failure and load: upstream timeouts
// and errors, a failing admit, refused types, malformed and random packets, answer caps, the
// in-flight and packet-rate limits, Stop/Start, and Create's checks. Unprivileged.
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/allowlist.h"
#include "net/dns_message.h"
#include "net/dns_resolver.h"
#include "net/dns_resolver_fixture.h"
#include "net/dns_test_util.h"
#include "net/ip_address.h"

namespace zygo::net {
namespace {

using dnstest::AddressAnswer;
using dnstest::AnswerAddresses;
using dnstest::FakeAnswer;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(DnsResolverTest, UpstreamTimeoutIsServFailWithinBoundedTime) {
  FakeAnswer drop;
  drop.drop = true;
  upstream_.Set("slow.example.com", kDnsTypeA, drop);
  StartResolver([](DnsResolverOptions& o) {
    o.upstream.timeout = absl::Milliseconds(200);
    o.upstream.tries = 2;
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<DnsMessage> reply = Query(11, "slow.example.com", kDnsTypeA);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kServFail);
  EXPECT_EQ(reply->header.id, 11);
  EXPECT_THAT(reply->questions[0].labels, ElementsAre("slow", "example", "com"));
  // Two tries, the second with a doubled timeout: 600 ms, far below the 5 s query timeout.
  EXPECT_GE(took, absl::Milliseconds(400));
  EXPECT_LT(took, absl::Seconds(2));
  EXPECT_EQ(upstream_.QueriesFor("slow.example.com"), 2);
  EXPECT_THAT(admissions(), IsEmpty());
}

TEST_F(DnsResolverTest, UpstreamErrorsArePassedOnAsServFailOrNxDomain) {
  FakeAnswer servfail;
  servfail.rcode = DnsRcode::kServFail;
  upstream_.Set("broken.example.com", kDnsTypeA, servfail);
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(12, "broken.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kServFail);

  reply = Query(13, "gone.example.com", kDnsTypeA);  // the fake answers NXDOMAIN
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kNxDomain);
  EXPECT_EQ(upstream_.QueriesFor("gone.example.com"), 1);
}

TEST_F(DnsResolverTest, AdmitFailureIsServFail) {
  upstream_.Set("api.example.com", kDnsTypeA, Addresses({AddressAnswer("198.51.100.7", 60)}));
  admit_status_ = absl::UnavailableError("nftables said no");
  StartResolver();
  absl::StatusOr<DnsMessage> reply = Query(14, "api.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.rcode, kServFail);
  EXPECT_THAT(reply->answers, IsEmpty());
  EXPECT_EQ(resolver_->stats().admit_failures, 1u);
}

TEST_F(DnsResolverTest, OtherTypesGetEmptyNoErrorAndAnyIsRefused) {
  StartResolver();
  // TXT, MX, HTTPS for an allowed name: NODATA, no upstream query.
  for (uint16_t qtype : {16, 15, 65}) {
    absl::StatusOr<DnsMessage> reply = Query(qtype, "api.example.com", qtype);
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header.rcode, kNoError) << qtype;
    EXPECT_THAT(reply->answers, IsEmpty());
  }
  for (uint16_t qtype : {kDnsTypeAny, uint16_t{252}, kDnsTypeOpt}) {  // ANY, AXFR, OPT
    absl::StatusOr<DnsMessage> reply = Query(qtype, "api.example.com", qtype);
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header.rcode, kRefused) << qtype;
  }
  // Class CHAOS ("version.bind"): REFUSED.
  std::vector<uint8_t> chaos = *BuildDnsQuery(20, "version.bind", 16);
  chaos[chaos.size() - 1] = 3;
  std::optional<DnsMessage> reply = ReplyTo(chaos, 21);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.rcode, kRefused);
  EXPECT_EQ(upstream_.queries(), 0);
}

TEST_F(DnsResolverTest, MalformedPacketsAreIgnoredOrFormErr) {
  StartResolver();
  auto header = [](uint16_t qdcount, uint8_t flags1 = 0x01) {
    return std::vector<uint8_t>{0x12, 0x34, flags1, 0, 0, static_cast<uint8_t>(qdcount),
                                0,    0,    0,      0, 0, 0};
  };
  auto with = [](std::vector<uint8_t> p, std::initializer_list<uint8_t> tail) {
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  auto label = [](std::vector<uint8_t> p, size_t n) {
    p.push_back(static_cast<uint8_t>(n));
    p.insert(p.end(), n, 'a');
    return p;
  };
  const std::vector<uint8_t> valid = *BuildDnsQuery(0x1234, "api.example.com", kDnsTypeA);

  // No reply at all: too short to carry an ID, or not a query.
  for (const std::vector<uint8_t>& p :
       {std::vector<uint8_t>{}, std::vector<uint8_t>{0x12, 0x34, 0x01},
        std::vector<uint8_t>(valid.begin(), valid.begin() + 11), header(1, 0x81)}) {
    EXPECT_FALSE(ReplyTo(p, 0xFFFF).has_value()) << p.size();
  }

  std::vector<uint8_t> long_name = header(1);
  for (int i = 0; i < 5; ++i) long_name = label(long_name, 60);
  long_name = with(long_name, {0, 0, 1, 0, 1});
  std::vector<uint8_t> five = header(5);
  for (int i = 0; i < 5; ++i) five = with(label(five, 1), {0, 0, 1, 0, 1});
  const std::vector<std::vector<uint8_t>> formerr = {
      std::vector<uint8_t>(valid.begin(), valid.end() - 1),  // truncated question
      with(header(1), {0xC0, 12, 0, 1, 0, 1}),               // pointer to itself
      with(header(1), {1, 'a', 0xC0, 12, 0, 1, 0, 1}),       // label, then back to it
      with(header(1), {0xC0, 14, 0xC0, 12, 0, 1, 0, 1}),     // two pointers, a cycle
      with(label(header(1), 64), {0, 0, 1, 0, 1}),           // label > 63
      long_name,                                             // name > 255
      header(0),                                             // qdcount 0
      five,                                                  // qdcount 5
      with(valid, {0}),                                      // trailing garbage
  };
  for (size_t i = 0; i < formerr.size(); ++i) {
    std::optional<DnsMessage> reply = ReplyTo(formerr[i], 0xFFFF);
    ASSERT_TRUE(reply.has_value()) << i;
    EXPECT_EQ(reply->header.rcode, kFormErr) << i;
    EXPECT_EQ(reply->header.id, 0x1234) << i;
    EXPECT_THAT(reply->questions, IsEmpty()) << i;
  }

  std::vector<uint8_t> status_opcode = valid;
  status_opcode[2] = 0x10 | 0x01;  // opcode 2 (STATUS)
  std::optional<DnsMessage> reply = ReplyTo(status_opcode, 0xFFFF);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.rcode, kNotImp);

  EXPECT_EQ(upstream_.queries(), 0);
  const DnsResolverStats stats = resolver_->stats();
  EXPECT_EQ(stats.ignored, 4u);
  EXPECT_EQ(stats.formerr, formerr.size());
}

// 10,000 seeded random packets and mutated queries; after every hundred a marker query
// proves the resolver still answers. Run under --config=asan for this to mean much.
TEST_F(DnsResolverTest, SurvivesRandomPackets) {
  upstream_.SetFallback(Addresses({AddressAnswer("198.51.100.99", 60)}));
  StartResolver([](DnsResolverOptions& o) { o.max_packets_per_second = 0; });
  std::mt19937 rng(0x5eed);
  const std::vector<uint8_t> valid = *BuildDnsQuery(1, "x.cdn.example.com", kDnsTypeA);
  constexpr uint16_t kMarker = 0xFFFF;
  for (int i = 0; i < 10000; ++i) {
    std::vector<uint8_t> p;
    if (i % 2 == 0) {
      p.resize(rng() % 700);
      for (uint8_t& b : p) b = static_cast<uint8_t>(rng());
    } else {
      p = valid;
      for (int f = 1 + rng() % 4; f > 0; --f) p[rng() % p.size()] = static_cast<uint8_t>(rng());
      if (rng() % 4 == 0) p.resize(rng() % p.size());
    }
    if (p.size() >= 2 && p[0] == 0xFF && p[1] == 0xFF) p[0] = 0;  // never the marker's ID
    ASSERT_TRUE(client_->Send(p).ok());
    if (i % 100 == 99) {
      absl::StatusOr<DnsMessage> marker = Query(kMarker, "marker.invalid", kDnsTypeA);
      ASSERT_TRUE(marker.ok()) << "after packet " << i << ": " << marker.status();
      ASSERT_EQ(marker->header.rcode, kNxDomain);
    }
  }
  absl::StatusOr<DnsMessage> reply = Query(77, "y.cdn.example.com", kDnsTypeA);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("198.51.100.99"));
  EXPECT_GE(resolver_->stats().packets, 10000u);
}

TEST_F(DnsResolverTest, AnswersAreCappedToWhatFitsWithoutTruncation) {
  std::vector<DnsAnswer> many;
  for (int i = 1; i <= 40; ++i) many.push_back(AddressAnswer(absl::StrCat("198.51.100.", i), 60));
  upstream_.Set("many.example.com", kDnsTypeA, Addresses(many));
  StartResolver();

  std::optional<std::vector<uint8_t>> bytes;
  ASSERT_TRUE(client_->Send(*BuildDnsQuery(30, "many.example.com", kDnsTypeA)).ok());
  bytes = client_->Receive(absl::Seconds(5));
  ASSERT_TRUE(bytes.has_value());
  EXPECT_LE(bytes->size(), 512u);
  absl::StatusOr<DnsMessage> reply = ParseDnsMessage(*bytes);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_FALSE(reply->header.truncated);
  EXPECT_EQ(reply->header.rcode, kNoError);
  const size_t without_edns = reply->answers.size();
  EXPECT_GT(without_edns, 20u);
  EXPECT_LT(without_edns, 40u);
  EXPECT_EQ(admissions().size(), without_edns);  // admitted only what the client sees

  // With an EDNS offer of 4096 bytes all 40 fit within our 1232-byte ceiling.
  std::vector<uint8_t> edns = *BuildDnsQuery(31, "many.example.com", kDnsTypeA);
  edns[11] = 1;
  edns.insert(edns.end(), {0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0});
  ASSERT_TRUE(client_->Send(edns).ok());
  bytes = client_->Receive(absl::Seconds(5));
  ASSERT_TRUE(bytes.has_value());
  reply = ParseDnsMessage(*bytes);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.id, 31);
  EXPECT_EQ(reply->answers.size(), 40u);
  ASSERT_EQ(reply->additionals.size(), 1u);
  EXPECT_EQ(reply->additionals[0].type, kDnsTypeOpt);
}

TEST_F(DnsResolverTest, TwoHundredParallelQueriesAreAllAnswered) {
  FakeAnswer slow = Addresses({AddressAnswer("203.0.113.50", 60)});
  slow.delay = absl::Milliseconds(50);
  upstream_.SetFallback(slow);
  StartResolver();
  constexpr int kQueries = 200;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kQueries; ++i) {
    ASSERT_TRUE(client_
                    ->Send(*BuildDnsQuery(static_cast<uint16_t>(1000 + i),
                                          absl::StrCat("n", i, ".bulk.example.com"), kDnsTypeA))
                    .ok());
  }
  std::set<uint16_t> ids;
  for (int i = 0; i < kQueries; ++i) {
    std::optional<std::vector<uint8_t>> bytes = client_->Receive(absl::Seconds(10));
    ASSERT_TRUE(bytes.has_value()) << "only " << i << " replies";
    absl::StatusOr<DnsMessage> reply = ParseDnsMessage(*bytes);
    ASSERT_TRUE(reply.ok()) << reply.status();
    const int n = reply->header.id - 1000;
    ASSERT_GE(n, 0);
    ASSERT_LT(n, kQueries);
    EXPECT_EQ(reply->header.rcode, kNoError);
    EXPECT_EQ(reply->questions[0].labels[0], absl::StrCat("n", n));  // ID matches question
    EXPECT_THAT(AnswerAddresses(*reply), ElementsAre("203.0.113.50"));
    ids.insert(reply->header.id);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kQueries));
  // Serially this would take 200 * 50 ms = 10 s.
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(upstream_.queries(), kQueries);
}

TEST_F(DnsResolverTest, InFlightLimitAnswersServFailAtOnce) {
  FakeAnswer slow = Addresses({AddressAnswer("203.0.113.51", 60)});
  slow.delay = absl::Milliseconds(500);
  upstream_.SetFallback(slow);
  StartResolver([](DnsResolverOptions& o) { o.max_in_flight = 2; });
  for (uint16_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client_->Send(*BuildDnsQuery(i, absl::StrCat("q", i, ".bulk.example.com"), kDnsTypeA))
            .ok());
  }
  std::vector<uint8_t> rcodes;
  for (int i = 0; i < 5; ++i) {
    std::optional<std::vector<uint8_t>> bytes = client_->Receive(absl::Seconds(5));
    ASSERT_TRUE(bytes.has_value());
    rcodes.push_back(ParseDnsMessage(*bytes)->header.rcode);
  }
  // The three refused ones come back first, without waiting for the upstream.
  EXPECT_THAT(rcodes, ElementsAre(kServFail, kServFail, kServFail, kNoError, kNoError));
  EXPECT_EQ(resolver_->stats().over_capacity, 3u);
  EXPECT_EQ(upstream_.queries(), 2);
}

TEST_F(DnsResolverTest, PacketRateIsLimited) {
  StartResolver([](DnsResolverOptions& o) { o.max_packets_per_second = 10; });
  for (uint16_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(client_->Send(*BuildDnsQuery(i, "flood.invalid", kDnsTypeA)).ok());
  }
  int replies = 0;
  while (client_->Receive(absl::Milliseconds(300)).has_value()) ++replies;
  EXPECT_GE(replies, 10);
  EXPECT_LE(replies, 15);
  EXPECT_GE(resolver_->stats().rate_limited, 25u);
}

TEST_F(DnsResolverTest, StopIsIdempotentAndDropsPendingQueries) {
  FakeAnswer drop;
  drop.drop = true;
  upstream_.Set("slow.example.com", kDnsTypeA, drop);
  StartResolver([](DnsResolverOptions& o) { o.upstream.timeout = absl::Seconds(10); });
  ASSERT_TRUE(client_->Send(*BuildDnsQuery(1, "slow.example.com", kDnsTypeA)).ok());
  // Wait until the lookup is pending upstream.
  for (int i = 0; i < 500 && upstream_.queries() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(upstream_.queries(), 1);
  const absl::Time start = absl::Now();
  resolver_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  resolver_->Stop();
  EXPECT_FALSE(client_->Receive(absl::Milliseconds(100)).has_value());
  EXPECT_EQ(resolver_->Start().code(), absl::StatusCode::kFailedPrecondition);
  // The socket is closed: a query now goes nowhere.
  ASSERT_TRUE(client_->Send(*BuildDnsQuery(2, "marker.invalid", kDnsTypeA)).ok());
  EXPECT_FALSE(client_->Receive(absl::Milliseconds(200)).has_value());
}

TEST_F(DnsResolverTest, StartTwiceFailsAndDestructorStops) {
  StartResolver();
  EXPECT_EQ(resolver_->Start().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<DnsMessage> reply = Query(1, "marker.invalid", kDnsTypeA);
  ASSERT_TRUE(reply.ok());
  resolver_.reset();  // joins the thread; ASan/LSan would see a leak or use-after-free
}

TEST(DnsResolverCreateTest, ChecksOptionsAndStopBeforeStartIsFine) {
  absl::StatusOr<base::UniqueFd> fd = dnstest::BindLoopbackUdp();
  ASSERT_TRUE(fd.ok());
  DnsResolverOptions options;
  options.upstream.servers = {DnsServer{*IpAddress::Parse("127.0.0.1"), 53}};
  EXPECT_EQ(DnsResolver::Create(std::move(*fd), options).status().code(),
            absl::StatusCode::kInvalidArgument);  // no admit
  options.admit = [](const IpAddress&, uint16_t, uint32_t) { return absl::OkStatus(); };
  EXPECT_EQ(DnsResolver::Create(base::UniqueFd(), options).status().code(),
            absl::StatusCode::kInvalidArgument);  // no socket
  DnsResolverOptions no_servers = options;
  no_servers.upstream.servers.clear();
  EXPECT_EQ(DnsResolver::Create(*dnstest::BindLoopbackUdp(), no_servers).status().code(),
            absl::StatusCode::kInvalidArgument);
  DnsResolverOptions bad_ttl = options;
  bad_ttl.min_ttl_seconds = 0;
  EXPECT_EQ(DnsResolver::Create(*dnstest::BindLoopbackUdp(), bad_ttl).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Any-name mode refuses an admit callback or an allowlist: neither would be applied.
  DnsResolverOptions any_name = options;
  any_name.names = DnsNamePolicy::kAnyName;
  EXPECT_EQ(DnsResolver::Create(*dnstest::BindLoopbackUdp(), any_name).status().code(),
            absl::StatusCode::kInvalidArgument);  // admit set
  any_name.admit = nullptr;
  any_name.allowlist = *Allowlist::Parse(std::vector<std::string>{"api.example.com:443"});
  EXPECT_EQ(DnsResolver::Create(*dnstest::BindLoopbackUdp(), any_name).status().code(),
            absl::StatusCode::kInvalidArgument);  // allowlist set
  any_name.allowlist = Allowlist();
  EXPECT_TRUE(DnsResolver::Create(*dnstest::BindLoopbackUdp(), any_name).ok());

  absl::StatusOr<std::unique_ptr<DnsResolver>> resolver =
      DnsResolver::Create(*dnstest::BindLoopbackUdp(), options);
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  (*resolver)->Stop();
  (*resolver)->Stop();
  EXPECT_EQ((*resolver)->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DnsResolverCreateTest, StartFailsCleanlyOnANonSocket) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  base::UniqueFd read_end(pipe_fds[0]);
  base::UniqueFd write_end(pipe_fds[1]);
  DnsResolverOptions options;
  options.upstream.servers = {DnsServer{*IpAddress::Parse("127.0.0.1"), 53}};
  options.admit = [](const IpAddress&, uint16_t, uint32_t) { return absl::OkStatus(); };
  absl::StatusOr<std::unique_ptr<DnsResolver>> resolver =
      DnsResolver::Create(std::move(read_end), options);
  ASSERT_TRUE(resolver.ok());
  EXPECT_FALSE((*resolver)->Start().ok());
  (*resolver)->Stop();
}

}  // namespace
}  // namespace zygo::net
