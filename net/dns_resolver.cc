// DnsResolver: the per-query decisions (what is answered locally, what goes upstream,
// what comes back) and the libuv plumbing around them.
#include "net/dns_resolver.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "net/address_policy.h"
#include "net/dns_message.h"

namespace zygo::net {

struct DnsResolver::Counters {
  std::atomic<uint64_t> packets{0};
  std::atomic<uint64_t> rate_limited{0};
  std::atomic<uint64_t> ignored{0};
  std::atomic<uint64_t> formerr{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> notimp{0};
  std::atomic<uint64_t> not_host_name{0};
  std::atomic<uint64_t> not_allowed{0};
  std::atomic<uint64_t> upstream_queries{0};
  std::atomic<uint64_t> over_capacity{0};
  std::atomic<uint64_t> servfail{0};
  std::atomic<uint64_t> addresses_refused{0};
  std::atomic<uint64_t> admit_failures{0};
  std::atomic<uint64_t> replies{0};
  std::atomic<uint64_t> send_errors{0};
};

// A query waiting for the upstream.
struct DnsResolver::Client {
  DnsQuery query;
  std::string name;             // normalized
  std::vector<uint16_t> ports;  // kAllowlist: where to admit the answers; kAnyName: empty
  sockaddr_storage peer;
};

namespace {

// Big enough for any UDP datagram, so nothing arrives truncated unnoticed.
constexpr size_t kRecvBufferSize = 65536;

// RFC 6895 3.1: 128-255 are query and meta types (AXFR, IXFR, TSIG, ANY, ...); OPT is a
// meta type too. None of them is a question about an address.
bool IsMetaType(uint16_t qtype) { return qtype == kDnsTypeOpt || (qtype >= 128 && qtype <= 255); }

absl::Status UvStatus(int rc, absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", uv_strerror(rc)));
}

std::string Rdata(const IpAddress& address) {
  absl::Span<const uint8_t> bytes = address.bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

absl::StatusOr<std::unique_ptr<DnsResolver>> DnsResolver::Create(base::UniqueFd socket,
                                                                 DnsResolverOptions options) {
  if (!socket.valid()) return absl::InvalidArgumentError("DNS resolver needs a bound UDP socket");
  switch (options.names) {
    case DnsNamePolicy::kAllowlist:
      if (!options.admit) {
        return absl::InvalidArgumentError("DNS resolver needs an admit callback");
      }
      break;
    case DnsNamePolicy::kAnyName:
      // Either would look like a filter that is not applied.
      if (options.admit || !options.allowlist.empty()) {
        return absl::InvalidArgumentError(
            "DNS resolver in any-name mode takes no allowlist and no admit callback");
      }
      break;
  }
  if (options.upstream.servers.empty()) {
    return absl::InvalidArgumentError("DNS resolver needs at least one upstream server");
  }
  if (options.min_ttl_seconds == 0 || options.min_ttl_seconds > options.max_ttl_seconds) {
    return absl::InvalidArgumentError("DNS resolver needs 0 < min_ttl_seconds <= max_ttl");
  }
  if (options.max_in_flight == 0) {
    return absl::InvalidArgumentError("DNS resolver needs max_in_flight > 0");
  }
  return std::unique_ptr<DnsResolver>(new DnsResolver(std::move(socket), std::move(options)));
}

DnsResolver::DnsResolver(base::UniqueFd socket, DnsResolverOptions options)
    : options_(std::move(options)),
      socket_(std::move(socket)),
      counters_(std::make_unique<Counters>()),
      recv_buffer_(kRecvBufferSize) {}

DnsResolver::~DnsResolver() { Stop(); }

absl::Status DnsResolver::Start() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (state_ != State::kCreated) {
    return absl::FailedPreconditionError("DNS resolver was already started");
  }
  // A failed start leaves nothing to retry with: the socket may be gone already.
  state_ = State::kStopped;
  if (absl::Status s = InitLoop(); !s.ok()) {
    return absl::InternalError(absl::StrCat("starting the DNS resolver: ", s.message()));
  }
  thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  state_ = State::kRunning;
  return absl::OkStatus();
}

absl::Status DnsResolver::InitLoop() {
  if (int rc = uv_loop_init(&loop_); rc != 0) return UvStatus(rc, "uv_loop_init");
  if (int rc = uv_async_init(&loop_, &stop_async_, &DnsResolver::OnStopRequested); rc != 0) {
    uv_loop_close(&loop_);
    return UvStatus(rc, "uv_async_init");
  }
  stop_async_.data = this;
  uv_udp_init(&loop_, &udp_);  // creates no socket, cannot fail
  udp_.data = this;

  absl::Status status;
  if (int rc = uv_udp_open(&udp_, socket_.get()); rc != 0) {
    status = UvStatus(rc, absl::StrCat("uv_udp_open(fd ", socket_.get(), ")"));
  } else {
    socket_.Release();  // closed by uv_close(&udp_) from now on
    absl::StatusOr<std::unique_ptr<DnsUpstream>> upstream =
        DnsUpstream::Create(&loop_, options_.upstream);
    if (!upstream.ok()) {
      status = upstream.status();
    } else {
      upstream_ = *std::move(upstream);
      if (int rc = uv_udp_recv_start(&udp_, &DnsResolver::OnAlloc, &DnsResolver::OnRecv); rc != 0) {
        status = UvStatus(rc, "uv_udp_recv_start");
      }
    }
  }
  if (!status.ok()) {
    // Nothing runs the loop yet: close the handles here and let uv_run finish closing them.
    TearDownOnLoop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    upstream_.reset();
    return status;
  }
  tokens_ = options_.max_packets_per_second;
  tokens_updated_ms_ = uv_now(&loop_);
  return absl::OkStatus();
}

void DnsResolver::Stop() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (state_ == State::kRunning) {
    uv_async_send(&stop_async_);
    thread_.join();
    // Every handle is closed once uv_run has returned, so this cannot be EBUSY.
    uv_loop_close(&loop_);
    upstream_.reset();
  }
  socket_.Reset();
  state_ = State::kStopped;
}

void DnsResolver::TearDownOnLoop() {
  // Runs the pending lookups' callbacks with kCancelled, which send nothing.
  if (upstream_ != nullptr) upstream_->Shutdown();
  uv_close(reinterpret_cast<uv_handle_t*>(&udp_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&stop_async_), nullptr);
}

void DnsResolver::OnStopRequested(uv_async_t* async) {
  static_cast<DnsResolver*>(async->data)->TearDownOnLoop();
}

DnsResolverStats DnsResolver::stats() const {
  const Counters& c = *counters_;
  DnsResolverStats s;
  s.packets = c.packets.load();
  s.rate_limited = c.rate_limited.load();
  s.ignored = c.ignored.load();
  s.formerr = c.formerr.load();
  s.refused = c.refused.load();
  s.notimp = c.notimp.load();
  s.not_host_name = c.not_host_name.load();
  s.not_allowed = c.not_allowed.load();
  s.upstream_queries = c.upstream_queries.load();
  s.over_capacity = c.over_capacity.load();
  s.servfail = c.servfail.load();
  s.addresses_refused = c.addresses_refused.load();
  s.admit_failures = c.admit_failures.load();
  s.replies = c.replies.load();
  s.send_errors = c.send_errors.load();
  return s;
}

void DnsResolver::OnAlloc(uv_handle_t* handle, size_t /*suggested*/, uv_buf_t* buf) {
  auto* self = static_cast<DnsResolver*>(handle->data);
  *buf = uv_buf_init(self->recv_buffer_.data(), self->recv_buffer_.size());
}

void DnsResolver::OnRecv(uv_udp_t* udp, ssize_t nread, const uv_buf_t* buf, const sockaddr* addr,
                         unsigned flags) {
  auto* self = static_cast<DnsResolver*>(udp->data);
  // No address means "nothing more to read" (nread == 0) or a socket error, which on an
  // unconnected UDP socket concerns no one query: nothing to answer either way.
  if (nread < 0 || addr == nullptr) return;
  ++self->counters_->packets;
  if (!self->TakeToken()) {
    ++self->counters_->rate_limited;
    return;
  }
  if (nread == 0 || (flags & UV_UDP_PARTIAL)) {  // an empty datagram, or a cut one
    ++self->counters_->ignored;
    return;
  }
  self->HandlePacket(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(buf->base), nread),
                     addr);
}

bool DnsResolver::TakeToken() {
  const double rate = options_.max_packets_per_second;
  if (rate == 0) return true;
  uv_update_time(&loop_);
  const uint64_t now = uv_now(&loop_);
  tokens_ = std::min(rate, tokens_ + static_cast<double>(now - tokens_updated_ms_) * rate / 1000);
  tokens_updated_ms_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

// The local decisions, in order: no reply to what is not a query; then FORMERR, NOTIMP and
// REFUSED for what we do not serve; then NXDOMAIN for what is not a host name or (with an
// allowlist) is off the list, whatever the type and before any upstream traffic; then an
// empty NOERROR for types other than A and AAAA. Only a host name (an allowed one, with an
// allowlist) asking for an address reaches the upstream.
void DnsResolver::HandlePacket(absl::Span<const uint8_t> packet, const sockaddr* peer) {
  Counters& c = *counters_;
  std::optional<DnsHeader> header = ParseDnsHeader(packet);
  // Never answer a response: that is how two DNS speakers end up in a loop.
  if (!header.has_value() || header->is_response) {
    ++c.ignored;
    return;
  }
  if (header->opcode != kDnsOpcodeQuery) {
    ++c.notimp;
    Send(peer, BuildDnsHeaderOnlyReply(*header, DnsRcode::kNotImp));
    return;
  }
  absl::StatusOr<DnsQuery> query = ParseDnsQuery(packet);
  if (!query.ok()) {
    ++c.formerr;
    Send(peer, BuildDnsHeaderOnlyReply(*header, DnsRcode::kFormErr));
    return;
  }
  const DnsQuestion& question = query->question;
  if (question.qclass != kDnsClassIn || IsMetaType(question.qtype)) {
    ++c.refused;
    Send(peer, BuildDnsReply(*query, DnsRcode::kRefused, {}));
    return;
  }
  absl::StatusOr<std::string> name = NormalizeDnsName(question.labels);
  // The root has no address, and c-ares must not be handed an empty name.
  if (!name.ok() || name->empty()) {
    ++c.not_host_name;
    Send(peer, BuildDnsReply(*query, DnsRcode::kNxDomain, {}));
    return;
  }
  std::vector<uint16_t> ports;
  if (options_.names == DnsNamePolicy::kAllowlist) {
    ports = options_.allowlist.PortsFor(*name);
    if (ports.empty()) {
      ++c.not_allowed;
      Send(peer, BuildDnsReply(*query, DnsRcode::kNxDomain, {}));
      return;
    }
  }
  if (question.qtype != kDnsTypeA && question.qtype != kDnsTypeAaaa) {
    Send(peer, BuildDnsReply(*query, DnsRcode::kNoError, {}));
    return;
  }
  if (in_flight_ >= options_.max_in_flight) {
    ++c.over_capacity;
    Send(peer, BuildDnsReply(*query, DnsRcode::kServFail, {}));
    return;
  }
  auto client = std::make_shared<Client>();
  client->query = *std::move(query);
  client->name = *std::move(name);
  client->ports = std::move(ports);
  std::memset(&client->peer, 0, sizeof(client->peer));
  std::memcpy(&client->peer, peer,
              peer->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  Resolve(std::move(client));
}

void DnsResolver::Resolve(std::shared_ptr<Client> client) {
  ++in_flight_;
  ++counters_->upstream_queries;
  const std::string name = client->name;
  const uint16_t qtype = client->query.question.qtype;
  // The callback may run before Query returns (c-ares fails some lookups synchronously).
  upstream_->Query(name, qtype, [this, client = std::move(client)](DnsUpstreamResult result) {
    --in_flight_;
    FinishResolve(*client, std::move(result));
  });
}

void DnsResolver::FinishResolve(const Client& client, DnsUpstreamResult result) {
  Counters& c = *counters_;
  const sockaddr* peer = reinterpret_cast<const sockaddr*>(&client.peer);
  switch (result.outcome) {
    case DnsUpstreamResult::Outcome::kCancelled:
      return;  // shutting down; the client will time out
    case DnsUpstreamResult::Outcome::kNxDomain:
      Send(peer, BuildDnsReply(client.query, DnsRcode::kNxDomain, {}));
      return;
    case DnsUpstreamResult::Outcome::kFailed:
      ++c.servfail;
      Send(peer, BuildDnsReply(client.query, DnsRcode::kServFail, {}));
      return;
    case DnsUpstreamResult::Outcome::kAddresses:
      break;
  }

  std::vector<IpAddress> addresses;
  std::vector<DnsAnswer> answers;
  for (const DnsUpstreamResult::Address& a : result.addresses) {
    if (IsRefusedAddress(a.address)) {
      ++c.addresses_refused;
      continue;
    }
    if (std::find(addresses.begin(), addresses.end(), a.address) != addresses.end()) continue;
    const uint32_t ttl = std::clamp(a.ttl, options_.min_ttl_seconds, options_.max_ttl_seconds);
    addresses.push_back(a.address);
    answers.push_back(DnsAnswer{client.query.question.qtype, ttl, Rdata(a.address)});
  }
  // Admit only what the reply will carry: no rule for an address the client never sees.
  // Any-name mode has no ports, so nothing is admitted (and there is no admit to call).
  answers.resize(DnsAnswersThatFit(client.query, answers));
  for (size_t i = 0; i < answers.size() && !client.ports.empty(); ++i) {
    for (uint16_t port : client.ports) {
      if (!options_.admit(addresses[i], port, answers[i].ttl).ok()) {
        ++c.admit_failures;
        ++c.servfail;
        Send(peer, BuildDnsReply(client.query, DnsRcode::kServFail, {}));
        return;
      }
    }
  }
  Send(peer, BuildDnsReply(client.query, DnsRcode::kNoError, answers));
}

void DnsResolver::Send(const sockaddr* peer, const std::vector<uint8_t>& reply) {
  uv_buf_t buf = uv_buf_init(const_cast<char*>(reinterpret_cast<const char*>(reply.data())),
                             static_cast<unsigned>(reply.size()));
  // try_send only: UDP to a local client practically never blocks, and a reply we cannot
  // send now is one the client will ask for again; queueing would let a client that does
  // not read grow our memory.
  if (uv_udp_try_send(&udp_, &buf, 1, peer) < 0) {
    ++counters_->send_errors;
  } else {
    ++counters_->replies;
  }
}

}  // namespace zygo::net
