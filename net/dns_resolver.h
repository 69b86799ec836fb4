// The sandbox's DNS server at 127.0.0.53. In egress it answers A/AAAA queries for
// allowlisted names only and admits every address it returns into the firewall before the
// answer goes back; in full it answers any name. Both drop refused addresses from answers.
#ifndef ZYGO_NET_DNS_RESOLVER_H_
#define ZYGO_NET_DNS_RESOLVER_H_

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/unique_fd.h"
#include "net/allowlist.h"
#include "net/dns_upstream.h"
#include "net/ip_address.h"

namespace zygo::net {

// Which names the resolver answers.
enum class DnsNamePolicy {
  // --net egress: only names on `allowlist`, and every answered address is admitted into
  // the firewall on the name's ports (`admit`) before the reply goes back.
  kAllowlist,
  // --net full: every host name is asked upstream and nothing is admitted (full mode's
  // firewall has no sets; public addresses are open anyway). Takes no allowlist and no
  // admit. Refused addresses are still dropped from answers (DNS rebinding).
  kAnyName,
};

struct DnsResolverOptions {
  // Where names are resolved. Given by the caller (the host's resolvers, or the test's
  // fake upstream); the sandbox's resolv.conf is never read.
  DnsUpstreamOptions upstream;

  // Which names resolve. In either policy answers are filtered through IsRefusedAddress
  // (net/address_policy.h), which no option can turn off.
  DnsNamePolicy names = DnsNamePolicy::kAllowlist;
  // kAllowlist only: the names that resolve, and the ports their addresses are admitted
  // on. A name off the list gets NXDOMAIN without any upstream query.
  Allowlist allowlist;
  // kAllowlist only: the firewall. Makes (address, port) reachable for `ttl_seconds` and
  // returns once the rule is live. Called for every returned address and every allowed
  // port before the reply is sent; an error turns the whole reply into SERVFAIL.
  std::function<absl::Status(const IpAddress& address, uint16_t port, uint32_t ttl_seconds)> admit;

  // TTLs in replies (and given to `admit`) are clamped to [min_ttl, max_ttl].
  uint32_t min_ttl_seconds = 1;
  uint32_t max_ttl_seconds = 300;
  // Queries waiting for the upstream at once; beyond this a query gets SERVFAIL at once.
  size_t max_in_flight = 256;
  // Datagrams accepted per second (token bucket with this burst); beyond it packets are
  // dropped unread, so a flooding sandbox costs the parent almost nothing. 0: no limit.
  uint32_t max_packets_per_second = 2000;
};

// Counters for tests and metrics; a snapshot, read with DnsResolver::stats().
struct DnsResolverStats {
  uint64_t packets = 0;            // datagrams received
  uint64_t rate_limited = 0;       // dropped by max_packets_per_second
  uint64_t ignored = 0;            // no header, a response, or a truncated datagram: no reply
  uint64_t formerr = 0;            // unparsable query: FORMERR
  uint64_t refused = 0;            // ANY and other meta types, non-IN class: REFUSED
  uint64_t notimp = 0;             // opcode other than QUERY: NOTIMP
  uint64_t not_host_name = 0;      // root, or a byte outside [A-Za-z0-9_-]: NXDOMAIN, no query
  uint64_t not_allowed = 0;        // name off the allowlist: NXDOMAIN, no query (0 in kAnyName)
  uint64_t upstream_queries = 0;   // lookups sent to the upstream
  uint64_t over_capacity = 0;      // max_in_flight reached: SERVFAIL
  uint64_t servfail = 0;           // upstream failure or admit failure: SERVFAIL
  uint64_t addresses_refused = 0;  // upstream addresses dropped by IsRefusedAddress
  uint64_t admit_failures = 0;     // `admit` calls that failed (0 in kAnyName: no admit)
  uint64_t replies = 0;            // replies sent
  uint64_t send_errors = 0;        // replies the socket would not take
};

// Serves DNS on one UDP socket with a libuv loop on its own thread.
//
// Parent side only (it runs in the supervisor or `zygo run`, never in the sandbox). The
// socket is created and bound by the caller — typically inside the sandbox's network
// namespace, at 127.0.0.53:53 — and the upstream lookups use sockets c-ares opens in the
// namespace of the calling process. No capabilities are needed beyond whatever `admit`
// needs. `admit` runs on the resolver's thread, one call at a time, and blocks that thread,
// so it must be quick (one netlink round trip); it must not call Stop().
//
// What a datagram gets, decided in this order (the same in both policies, except where
// the allowlist is named):
// - shorter than a header, a response (QR set), empty or cut: no reply at all;
// - an opcode other than QUERY: NOTIMP; unparsable (bad or looping names, labels over 63 or
//   names over 255 octets, qdcount other than 1, answer or authority records, trailing
//   bytes, two OPT records): FORMERR; both header-only with the query's ID;
// - a class other than IN, or a meta type (ANY, AXFR, IXFR, OPT, 128-255): REFUSED;
// - not a host name at all (the root, or other bytes than letters, digits, '-', '_'), or
//   (kAllowlist) a name off the allowlist: NXDOMAIN, with no upstream query;
// - a type other than A/AAAA (TXT, MX, HTTPS, ...): NOERROR without answers, no upstream
//   query (a full-mode program that needs those asks a public server itself);
// - more than max_in_flight lookups pending: SERVFAIL at once;
// - A/AAAA: asked upstream. Upstream NXDOMAIN is passed on; a timeout, SERVFAIL, REFUSED
//   or garbage becomes SERVFAIL. Otherwise the addresses minus refused ones and duplicates,
//   TTLs clamped, as many as fit in 512 bytes (or the client's EDNS size, at most 1232),
//   and (kAllowlist) each admitted on every allowed port before the reply is sent. TC is
//   never set because TCP is not served. If no address remains the reply is NOERROR with
//   no answers (NODATA): the name exists, it has no address this sandbox may use, and an
//   NXDOMAIN would make stub resolvers drop the other address family too. CNAME chains are
//   followed by c-ares and flattened: every answer is owned by the question name. Nothing
//   is cached. The rate limit and max_in_flight hold in both policies.
// Every reply keeps the query's ID, RD and CD bits and echoes its question byte for byte.
class DnsResolver {
 public:
  // Checks the options (kAllowlist: admit set; kAnyName: no admit and an empty allowlist,
  // so neither is mistaken for a filter; at least one upstream server, sane limits)
  // and takes the socket (a bound AF_INET/AF_INET6 SOCK_DGRAM socket). Starts nothing.
  static absl::StatusOr<std::unique_ptr<DnsResolver>> Create(base::UniqueFd socket,
                                                             DnsResolverOptions options);
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;
  // Stops the resolver (see Stop).
  ~DnsResolver();

  // Sets up the loop, the socket watcher and the c-ares channel and starts serving on a
  // new thread. FailedPrecondition when already started or stopped (a resolver serves
  // once; the socket is closed when it stops). A failed Start leaves it stopped.
  absl::Status Start();

  // Cancels pending upstream lookups (their clients get no reply), closes the socket and
  // joins the thread. Safe to call more than once, from any thread except the resolver's
  // own, and before Start.
  void Stop();

  DnsResolverStats stats() const;

 private:
  struct Counters;
  struct Client;

  DnsResolver(base::UniqueFd socket, DnsResolverOptions options);
  absl::Status InitLoop();
  void TearDownOnLoop();
  bool TakeToken();
  void HandlePacket(absl::Span<const uint8_t> packet, const sockaddr* peer);
  void Resolve(std::shared_ptr<Client> client);
  void FinishResolve(const Client& client, DnsUpstreamResult result);
  void Send(const sockaddr* peer, const std::vector<uint8_t>& reply);

  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRecv(uv_udp_t* udp, ssize_t nread, const uv_buf_t* buf, const sockaddr* addr,
                     unsigned flags);
  static void OnStopRequested(uv_async_t* async);

  enum class State { kCreated, kRunning, kStopped };

  const DnsResolverOptions options_;
  base::UniqueFd socket_;  // until Start hands it to libuv
  std::unique_ptr<Counters> counters_;

  std::mutex lifecycle_mu_;  // serializes Start and Stop
  State state_ = State::kCreated;
  std::thread thread_;

  // Loop state: touched by the loop thread only, once Start has spawned it.
  uv_loop_t loop_;
  uv_udp_t udp_;
  uv_async_t stop_async_;
  std::unique_ptr<DnsUpstream> upstream_;
  size_t in_flight_ = 0;
  double tokens_ = 0;
  uint64_t tokens_updated_ms_ = 0;
  std::vector<char> recv_buffer_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_DNS_RESOLVER_H_
