// DnsResolver against a fake upstream on 127.0.0.1: what is answered locally, what goes
// upstream, what comes back, and that admission happens before the reply; the same for
// any-name mode (--net full), which admits nothing. Unprivileged.
#include "net/dns_resolver.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/allowlist.h"
#include "net/dns_message.h"
#include "net/dns_test_util.h"
#include "net/ip_address.h"

namespace zygo::net {
namespace {

using dnstest::AddressAnswer;
using dnstest::AnswerAddresses;
using dnstest::DnsTestClient;
using dnstest::FakeAnswer;
using dnstest::FakeUpstream;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr uint8_t kNoError = 0;
constexpr uint8_t kFormErr = 1;
constexpr uint8_t kServFail = 2;
constexpr uint8_t kNxDomain = 3;
constexpr uint8_t kNotImp = 4;
constexpr uint8_t kRefused = 5;

struct Admission {
  std::string address;
  uint16_t port;
  uint32_t ttl;
  int sequence;
  bool reply_already_there;  // the client socket had a datagram waiting during admit
};

FakeAnswer Addresses(std::vector<DnsAnswer> answers) {
  FakeAnswer a;
  a.answers = std::move(answers);
  return a;
}

class DnsResolverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(upstream_.Start().ok()); }
  // Before the members the admit callback uses go away.
  void TearDown() override {
    if (resolver_ != nullptr) resolver_->Stop();
  }

  void StartResolver(const std::function<void(DnsResolverOptions&)>& tweak = {}) {
    absl::StatusOr<base::UniqueFd> fd = dnstest::BindLoopbackUdp();
    ASSERT_TRUE(fd.ok()) << fd.status();
    absl::StatusOr<uint16_t> port = dnstest::LocalPort(fd->get());
    ASSERT_TRUE(port.ok()) << port.status();
    // The client exists before the resolver's thread starts, so admit may look at it.
    absl::StatusOr<DnsTestClient> client = DnsTestClient::Create(*port);
    ASSERT_TRUE(client.ok()) << client.status();
    client_.emplace(*std::move(client));

    DnsResolverOptions options;
    options.upstream.servers = {DnsServer{*IpAddress::Parse("127.0.0.1"), upstream_.port()}};
    options.upstream.timeout = absl::Seconds(2);
    options.upstream.tries = 1;
    const std::vector<std::string> allow = {
        "api.example.com:443",    "*.cdn.example.com:443",   "*.cdn.example.com:80",
        "mixed.example.com:443",  "private.example.com:443", "v6.example.com:443",
        "mapped.example.com:443", "slow.example.com:443",    "broken.example.com:443",
        "ttl.example.com:443",    "many.example.com:443",    "gone.example.com:443",
        "*.bulk.example.com:443",
    };
    absl::StatusOr<Allowlist> allowlist = Allowlist::Parse(allow);
    ASSERT_TRUE(allowlist.ok()) << allowlist.status();
    options.allowlist = *std::move(allowlist);
    options.admit = [this](const IpAddress& address, uint16_t port, uint32_t ttl) {
      std::lock_guard<std::mutex> lock(mu_);
      admissions_.push_back({address.ToString(), port, ttl, sequence_++, client_->HasPending()});
      return admit_status_;
    };
    if (tweak) tweak(options);
    absl::StatusOr<std::unique_ptr<DnsResolver>> resolver =
        DnsResolver::Create(*std::move(fd), std::move(options));
    ASSERT_TRUE(resolver.ok()) << resolver.status();
    resolver_ = *std::move(resolver);
    ASSERT_TRUE(resolver_->Start().ok());
  }

  absl::StatusOr<DnsMessage> Query(uint16_t id, absl::string_view name, uint16_t qtype) {
    return client_->Query(id, name, qtype);
  }

  std::vector<Admission> admissions() {
    std::lock_guard<std::mutex> lock(mu_);
    return admissions_;
  }

  // Sends `packet` and then a local-only query as a marker; returns the reply to `packet`
  // if there was one. The resolver answers local decisions in arrival order.
  std::optional<DnsMessage> ReplyTo(const std::vector<uint8_t>& packet, uint16_t marker_id) {
    EXPECT_TRUE(client_->Send(packet).ok());
    EXPECT_TRUE(client_->Send(*BuildDnsQuery(marker_id, "marker.invalid", kDnsTypeA)).ok());
    std::optional<DnsMessage> reply;
    while (true) {
      std::optional<std::vector<uint8_t>> bytes = client_->Receive(absl::Seconds(5));
      if (!bytes.has_value()) {
        ADD_FAILURE() << "the resolver stopped answering";
        return std::nullopt;
      }
      absl::StatusOr<DnsMessage> message = ParseDnsMessage(*bytes);
      EXPECT_TRUE(message.ok()) << message.status();  // every reply is well-formed
      if (!message.ok()) continue;
      if (message->header.id == marker_id && message->header.rcode == kNxDomain &&
          !message->questions.empty() && message->questions[0].labels[0] == "marker") {
        return reply;
      }
      reply = *message;
    }
  }

  FakeUpstream upstream_;
  std::optional<DnsTestClient> client_;
  std::unique_ptr<DnsResolver> resolver_;
  std::mutex mu_;
  std::vector<Admission> admissions_;
  std::atomic<int> sequence_{0};
  absl::Status admit_status_;
};

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
