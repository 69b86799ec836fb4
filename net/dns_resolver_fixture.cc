// The shared fixture of the DnsResolver tests (see dns_resolver_fixture.h).
#include "net/dns_resolver_fixture.h"

#include <utility>

#include "absl/time/time.h"
#include "core/base/unique_fd.h"
#include "net/allowlist.h"
#include "net/ip_address.h"

namespace zygo::net {

using dnstest::DnsTestClient;
using dnstest::FakeAnswer;

FakeAnswer Addresses(std::vector<DnsAnswer> answers) {
  FakeAnswer a;
  a.answers = std::move(answers);
  return a;
}

void DnsResolverTest::SetUp() { ASSERT_TRUE(upstream_.Start().ok()); }

void DnsResolverTest::TearDown() {
  if (resolver_ != nullptr) resolver_->Stop();
}

void DnsResolverTest::StartResolver(const std::function<void(DnsResolverOptions&)>& tweak) {
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

absl::StatusOr<DnsMessage> DnsResolverTest::Query(uint16_t id, absl::string_view name,
                                                  uint16_t qtype) {
  return client_->Query(id, name, qtype);
}

std::vector<Admission> DnsResolverTest::admissions() {
  std::lock_guard<std::mutex> lock(mu_);
  return admissions_;
}

std::optional<DnsMessage> DnsResolverTest::ReplyTo(const std::vector<uint8_t>& packet,
                                                   uint16_t marker_id) {
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

}  // namespace zygo::net
