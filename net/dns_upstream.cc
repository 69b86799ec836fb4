// c-ares on a libuv loop: c-ares tells us which sockets to watch (sock_state_cb), uv_poll
// watches them and hands readiness back through ares_process_fd, and one uv_timer fires
// at ares_timeout() so retries and timeouts happen without a busy loop.
#include "net/dns_upstream.h"

#include <ares.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "net/dns_message.h"

namespace zygo::net {
namespace {

// More addresses than any reply can carry (kDnsMaxEdnsReplySize / 16 bytes per A record).
constexpr int kMaxAddresses = 80;
// c-ares' own EDNS payload size towards the upstream; large enough that TCP fallback is rare.
constexpr int kUpstreamEdnsSize = 1232;

absl::Status InitAresLibrary() {
  static int status = [] { return ares_library_init(ARES_LIB_INIT_ALL); }();
  if (status != ARES_SUCCESS) {
    return absl::InternalError(absl::StrCat("ares_library_init: ", ares_strerror(status)));
  }
  return absl::OkStatus();
}

struct PendingQuery {
  uint16_t qtype;
  DnsUpstream::Callback done;
};

DnsUpstreamResult ParseAddresses(uint16_t qtype, const unsigned char* abuf, int alen) {
  DnsUpstreamResult result;
  int parsed = ARES_SUCCESS;
  int count = kMaxAddresses;
  if (qtype == kDnsTypeA) {
    ares_addrttl ttls[kMaxAddresses];
    parsed = ares_parse_a_reply(abuf, alen, nullptr, ttls, &count);
    for (int i = 0; parsed == ARES_SUCCESS && i < count; ++i) {
      result.addresses.push_back(
          {IpAddress::V4(ttls[i].ipaddr), static_cast<uint32_t>(std::max(ttls[i].ttl, 0))});
    }
  } else {
    ares_addr6ttl ttls[kMaxAddresses];
    parsed = ares_parse_aaaa_reply(abuf, alen, nullptr, ttls, &count);
    for (int i = 0; parsed == ARES_SUCCESS && i < count; ++i) {
      in6_addr addr;
      static_assert(sizeof(addr) == sizeof(ttls[i].ip6addr));
      std::memcpy(&addr, &ttls[i].ip6addr, sizeof(addr));
      result.addresses.push_back(
          {IpAddress::V6(addr), static_cast<uint32_t>(std::max(ttls[i].ttl, 0))});
    }
  }
  // ENODATA: the name exists but has no record of this type (after following CNAMEs).
  if (parsed == ARES_SUCCESS || parsed == ARES_ENODATA) {
    result.outcome = DnsUpstreamResult::Outcome::kAddresses;
  } else {
    result.outcome = DnsUpstreamResult::Outcome::kFailed;
    result.detail = absl::StrCat("parsing the upstream answer: ", ares_strerror(parsed));
    result.addresses.clear();
  }
  return result;
}

void OnAnswer(void* arg, int status, int /*timeouts*/, unsigned char* abuf, int alen) {
  std::unique_ptr<PendingQuery> pending(static_cast<PendingQuery*>(arg));
  DnsUpstreamResult result;
  switch (status) {
    case ARES_SUCCESS:
      result = ParseAddresses(pending->qtype, abuf, alen);
      break;
    case ARES_ENODATA:
      result.outcome = DnsUpstreamResult::Outcome::kAddresses;
      break;
    case ARES_ENOTFOUND:
      result.outcome = DnsUpstreamResult::Outcome::kNxDomain;
      break;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      result.outcome = DnsUpstreamResult::Outcome::kCancelled;
      break;
    default:
      result.outcome = DnsUpstreamResult::Outcome::kFailed;
      result.detail = ares_strerror(status);
      break;
  }
  pending->done(std::move(result));
}

void FreePoll(uv_handle_t* handle) { delete reinterpret_cast<uv_poll_t*>(handle); }
void FreeTimer(uv_handle_t* handle) { delete reinterpret_cast<uv_timer_t*>(handle); }

}  // namespace

absl::StatusOr<std::unique_ptr<DnsUpstream>> DnsUpstream::Create(
    uv_loop_t* loop, const DnsUpstreamOptions& options) {
  if (options.servers.empty()) return absl::InvalidArgumentError("no upstream DNS servers");
  if (options.tries < 1 || options.timeout < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError("upstream DNS timeout and tries must be positive");
  }
  if (absl::Status s = InitAresLibrary(); !s.ok()) return s;

  std::unique_ptr<DnsUpstream> upstream(new DnsUpstream(loop));
  upstream->timer_ = new uv_timer_t;
  uv_timer_init(loop, upstream->timer_);
  upstream->timer_->data = upstream.get();

  ares_options ao = {};
  // NOSEARCH/NOALIASES: the name is final; no search domains, no HOSTALIASES file.
  ao.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_EDNS;
  ao.ednspsz = kUpstreamEdnsSize;
  ao.timeout = static_cast<int>(absl::ToInt64Milliseconds(options.timeout));
  ao.tries = options.tries;
  ao.ndomains = 0;
  ao.domains = nullptr;
  char lookups[] = "b";  // DNS only, never /etc/hosts
  ao.lookups = lookups;
  // Read no resolv.conf at all: the servers come from the caller, and the other settings
  // are all given here (explicit options also win over RES_OPTIONS/LOCALDOMAIN).
  char resolvconf[] = "/dev/null";
  ao.resolvconf_path = resolvconf;
  ao.sock_state_cb = &DnsUpstream::OnSocketState;
  ao.sock_state_cb_data = upstream.get();
  const int optmask = ARES_OPT_FLAGS | ARES_OPT_EDNSPSZ | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
                      ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS | ARES_OPT_RESOLVCONF |
                      ARES_OPT_SOCK_STATE_CB | ARES_OPT_NOROTATE;
  ares_channel channel = nullptr;
  if (int rc = ares_init_options(&channel, &ao, optmask); rc != ARES_SUCCESS) {
    upstream->Shutdown();
    return absl::InternalError(absl::StrCat("ares_init_options: ", ares_strerror(rc)));
  }
  upstream->channel_ = channel;

  std::vector<ares_addr_port_node> nodes(options.servers.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const DnsServer& server = options.servers[i];
    nodes[i].next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
    nodes[i].family = server.address.family();
    std::memcpy(&nodes[i].addr, server.address.bytes().data(), server.address.bytes().size());
    nodes[i].udp_port = server.port;
    nodes[i].tcp_port = server.port;
  }
  if (int rc = ares_set_servers_ports(channel, nodes.data()); rc != ARES_SUCCESS) {
    upstream->Shutdown();
    return absl::InternalError(absl::StrCat("ares_set_servers_ports: ", ares_strerror(rc)));
  }
  return upstream;
}

DnsUpstream::DnsUpstream(uv_loop_t* loop) : loop_(loop) {}

DnsUpstream::~DnsUpstream() { Shutdown(); }

void DnsUpstream::Query(const std::string& name, uint16_t qtype, Callback done) {
  if (channel_ == nullptr) {
    done(DnsUpstreamResult{DnsUpstreamResult::Outcome::kCancelled, {}, "shut down"});
    return;
  }
  auto* pending = new PendingQuery{qtype, std::move(done)};
  ares_query(channel_, name.c_str(), kDnsClassIn, qtype, &OnAnswer, pending);
  RearmTimer();
}

void DnsUpstream::Shutdown() {
  if (channel_ != nullptr) {
    // Runs every pending callback with ARES_EDESTRUCTION and reports each socket closed
    // through OnSocketState, which closes its poll handle.
    ares_channel channel = std::exchange(channel_, nullptr);
    ares_destroy(channel);
  }
  for (auto& [fd, poll] : polls_) {
    uv_close(reinterpret_cast<uv_handle_t*>(poll), FreePoll);
  }
  polls_.clear();
  if (timer_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(std::exchange(timer_, nullptr)), FreeTimer);
  }
}

void DnsUpstream::OnSocketState(void* data, int fd, int readable, int writable) {
  auto* self = static_cast<DnsUpstream*>(data);
  auto it = self->polls_.find(fd);
  if (!readable && !writable) {
    // c-ares closes the socket right after this returns; uv_close stops watching it first,
    // as libuv requires of a polled fd.
    if (it != self->polls_.end()) {
      uv_close(reinterpret_cast<uv_handle_t*>(it->second), FreePoll);
      self->polls_.erase(it);
    }
    return;
  }
  uv_poll_t* poll = nullptr;
  if (it == self->polls_.end()) {
    poll = new uv_poll_t;
    if (uv_poll_init_socket(self->loop_, poll, fd) != 0) {
      // Unwatchable socket: the lookups on it end by c-ares' timeout instead.
      delete poll;
      return;
    }
    poll->data = self;
    self->polls_.emplace(fd, poll);
  } else {
    poll = it->second;
  }
  const int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
  uv_poll_start(poll, events, &DnsUpstream::OnPoll);
}

void DnsUpstream::OnPoll(uv_poll_t* poll, int status, int events) {
  auto* self = static_cast<DnsUpstream*>(poll->data);
  if (self->channel_ == nullptr) return;
  int fd = -1;
  uv_fileno(reinterpret_cast<uv_handle_t*>(poll), &fd);
  // On a poll error let c-ares read (and so notice the error on) the socket.
  const bool read = status < 0 || (events & UV_READABLE);
  const bool write = status >= 0 && (events & UV_WRITABLE);
  ares_process_fd(self->channel_, read ? fd : ARES_SOCKET_BAD, write ? fd : ARES_SOCKET_BAD);
  self->RearmTimer();
}

void DnsUpstream::OnTimer(uv_timer_t* timer) {
  auto* self = static_cast<DnsUpstream*>(timer->data);
  if (self->channel_ == nullptr) return;
  ares_process_fd(self->channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  self->RearmTimer();
}

void DnsUpstream::RearmTimer() {
  if (channel_ == nullptr || timer_ == nullptr) return;
  timeval tv;
  if (ares_timeout(channel_, nullptr, &tv) == nullptr) {
    uv_timer_stop(timer_);
    return;
  }
  // Round up so the timer never fires just before c-ares considers the deadline passed.
  const uint64_t ms = static_cast<uint64_t>(tv.tv_sec) * 1000 + (tv.tv_usec + 999) / 1000;
  uv_timer_start(timer_, &DnsUpstream::OnTimer, ms, 0);
}

}  // namespace zygo::net
