// Upstream A/AAAA lookups for the egress resolver: a c-ares channel driven by a libuv loop
// (sockets through ARES_OPT_SOCK_STATE_CB + uv_poll, timeouts through a uv_timer).
#ifndef ZYGO_NET_DNS_UPSTREAM_H_
#define ZYGO_NET_DNS_UPSTREAM_H_

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "net/ip_address.h"

struct ares_channeldata;

namespace zygo::net {

// A server the resolver forwards allowed names to.
struct DnsServer {
  IpAddress address;
  uint16_t port = 53;
};

struct DnsUpstreamOptions {
  std::vector<DnsServer> servers;  // tried in order; must not be empty
  // Per try; c-ares doubles it each round, and a round asks every server in turn. With one
  // server the worst case is timeout * (2^tries - 1): 3 s by default, under the 5 s a glibc
  // stub waits before it asks again.
  absl::Duration timeout = absl::Seconds(1);
  int tries = 2;  // rounds over all servers
};

// What an upstream lookup came to.
struct DnsUpstreamResult {
  enum class Outcome {
    kAddresses,  // `addresses` holds the records of the asked type (possibly none)
    kNxDomain,   // the upstream said the name does not exist
    kFailed,     // timeout, SERVFAIL/REFUSED, unparsable answer, ...: the client gets SERVFAIL
    kCancelled,  // the channel shut down; nobody is waiting any more
  };
  struct Address {
    IpAddress address;
    uint32_t ttl = 0;  // as the upstream gave it, after c-ares capped it by any CNAME's TTL
  };
  Outcome outcome = Outcome::kFailed;
  std::vector<Address> addresses;
  std::string detail;  // c-ares' reason for kFailed
};

// One c-ares channel bound to one uv loop. Every method, and every callback, runs on the
// loop's thread. The channel is configured only from DnsUpstreamOptions: it never reads
// /etc/resolv.conf, search domains, HOSTALIASES or /etc/hosts.
class DnsUpstream {
 public:
  using Callback = std::function<void(DnsUpstreamResult)>;

  // Needs ares_library_init to have run (Create does it once per process).
  static absl::StatusOr<std::unique_ptr<DnsUpstream>> Create(uv_loop_t* loop,
                                                             const DnsUpstreamOptions& options);
  DnsUpstream(const DnsUpstream&) = delete;
  DnsUpstream& operator=(const DnsUpstream&) = delete;
  // Requires Shutdown() to have run and the loop to have closed its handles.
  ~DnsUpstream();

  // Looks up `name` (normalized, no trailing dot) for `qtype` (A or AAAA) in class IN.
  // `done` runs exactly once, possibly before Query returns.
  void Query(const std::string& name, uint16_t qtype, Callback done);

  // Cancels every pending lookup (their callbacks run with kCancelled), destroys the
  // channel and closes the uv handles. Idempotent. The loop must run afterwards for the
  // handle close callbacks.
  void Shutdown();

 private:
  explicit DnsUpstream(uv_loop_t* loop);
  static void OnSocketState(void* data, int fd, int readable, int writable);
  static void OnPoll(uv_poll_t* poll, int status, int events);
  static void OnTimer(uv_timer_t* timer);
  void RearmTimer();

  uv_loop_t* loop_;
  ares_channeldata* channel_ = nullptr;
  uv_timer_t* timer_ = nullptr;                // freed by its close callback
  std::unordered_map<int, uv_poll_t*> polls_;  // by socket; owned until closed
};

}  // namespace zygo::net

#endif  // ZYGO_NET_DNS_UPSTREAM_H_
