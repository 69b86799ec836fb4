// The shared fixture of the DnsResolver tests: a resolver on 127.0.0.1 in front of a fake
// upstream, with a recording admit callback and a client socket. Unprivileged, test only.
#ifndef ZYGO_NET_DNS_RESOLVER_FIXTURE_H_
#define ZYGO_NET_DNS_RESOLVER_FIXTURE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "net/dns_message.h"
#include "net/dns_resolver.h"
#include "net/dns_test_util.h"

namespace zygo::net {

inline constexpr uint8_t kNoError = 0;
inline constexpr uint8_t kFormErr = 1;
inline constexpr uint8_t kServFail = 2;
inline constexpr uint8_t kNxDomain = 3;
inline constexpr uint8_t kNotImp = 4;
inline constexpr uint8_t kRefused = 5;

struct Admission {
  std::string address;
  uint16_t port;
  uint32_t ttl;
  int sequence;
  bool reply_already_there;  // the client socket had a datagram waiting during admit
};

// A fake upstream answer carrying `answers` with NOERROR.
dnstest::FakeAnswer Addresses(std::vector<DnsAnswer> answers);

class DnsResolverTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // Before the members the admit callback uses go away.
  void TearDown() override;

  // Starts resolver_ on a fresh loopback socket with the fixture's allowlist and admit
  // callback; `tweak` may change the options first.
  void StartResolver(const std::function<void(DnsResolverOptions&)>& tweak = {});

  absl::StatusOr<DnsMessage> Query(uint16_t id, absl::string_view name, uint16_t qtype);

  std::vector<Admission> admissions();

  // Sends `packet` and then a local-only query as a marker; returns the reply to `packet`
  // if there was one. The resolver answers local decisions in arrival order.
  std::optional<DnsMessage> ReplyTo(const std::vector<uint8_t>& packet, uint16_t marker_id);

  dnstest::FakeUpstream upstream_;
  std::optional<dnstest::DnsTestClient> client_;
  std::unique_ptr<DnsResolver> resolver_;
  std::mutex mu_;
  std::vector<Admission> admissions_;
  std::atomic<int> sequence_{0};
  absl::Status admit_status_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_DNS_RESOLVER_FIXTURE_H_
