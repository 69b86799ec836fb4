// Test helpers for the DNS resolver: a fake upstream server answering from a table and
// counting what it is asked, and a UDP client. Loopback only, unprivileged.
#ifndef ZYGO_NET_DNS_TEST_UTIL_H_
#define ZYGO_NET_DNS_TEST_UTIL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/unique_fd.h"
#include "net/dns_message.h"

namespace zygo::net::dnstest {

// A UDP socket bound to 127.0.0.1 on an ephemeral port.
absl::StatusOr<base::UniqueFd> BindLoopbackUdp();
// The port a bound socket got.
absl::StatusOr<uint16_t> LocalPort(int fd);

// One canned upstream answer.
struct FakeAnswer {
  DnsRcode rcode = DnsRcode::kNoError;
  std::vector<DnsAnswer> answers;
  bool drop = false;                            // never answer (an upstream timeout)
  absl::Duration delay = absl::ZeroDuration();  // answer this much later
};

// "198.51.100.7" or "2001:db8::1" as a DnsAnswer of type A or AAAA.
DnsAnswer AddressAnswer(absl::string_view address, uint32_t ttl);

// A DNS server on 127.0.0.1 answering from a table keyed by (name, qtype); names are
// normalized (lowercase). A name in the table asked for another type gets NOERROR without
// answers; unknown names get NXDOMAIN, or the fallback when one is set.
class FakeUpstream {
 public:
  FakeUpstream() = default;
  ~FakeUpstream();

  absl::Status Start();
  uint16_t port() const { return port_; }

  void Set(absl::string_view name, uint16_t qtype, FakeAnswer answer);
  void SetFallback(FakeAnswer answer);

  // Queries received, in total and per normalized name.
  int queries() const { return queries_.load(); }
  int QueriesFor(absl::string_view name) const;

 private:
  void Serve();
  void HandleQuery(const uint8_t* data, size_t size, const void* peer, unsigned peer_len);

  struct Scheduled {
    absl::Time due;
    std::vector<uint8_t> reply;
    std::vector<uint8_t> peer;
  };

  base::UniqueFd socket_;
  base::UniqueFd stop_event_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> queries_{0};
  mutable std::mutex mu_;
  std::map<std::pair<std::string, uint16_t>, FakeAnswer> table_;
  std::optional<FakeAnswer> fallback_;
  std::map<std::string, int> per_name_;
  std::vector<Scheduled> scheduled_;  // server thread only
};

// A UDP client on 127.0.0.1 talking to one server port.
class DnsTestClient {
 public:
  static absl::StatusOr<DnsTestClient> Create(uint16_t server_port);

  int fd() const { return socket_.get(); }
  absl::Status Send(absl::Span<const uint8_t> packet);
  // The next datagram, or nullopt after `timeout`.
  std::optional<std::vector<uint8_t>> Receive(absl::Duration timeout);
  // Whether a datagram is waiting right now (does not read it).
  bool HasPending() const;
  // Sends a query and parses the reply; NotFound after `timeout` without a reply.
  absl::StatusOr<DnsMessage> Query(uint16_t id, absl::string_view name, uint16_t qtype,
                                   absl::Duration timeout = absl::Seconds(5));

 private:
  explicit DnsTestClient(base::UniqueFd socket) : socket_(std::move(socket)) {}
  base::UniqueFd socket_;
};

// The addresses in the A/AAAA answers of `reply`, as text.
std::vector<std::string> AnswerAddresses(const DnsMessage& reply);

}  // namespace zygo::net::dnstest

#endif  // ZYGO_NET_DNS_TEST_UTIL_H_
