// Fake upstream DNS server and UDP client for the resolver tests.
#include "net/dns_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "net/ip_address.h"

namespace zygo::net::dnstest {
namespace {

std::string LowerName(const std::vector<std::string>& labels) {
  return absl::AsciiStrToLower(absl::StrJoin(labels, "."));
}

int PollTimeoutMs(absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(timeout) + 1, 1 << 30));
}

}  // namespace

absl::StatusOr<base::UniqueFd> BindLoopbackUdp() {
  base::UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return base::ErrnoStatus(errno, "socket(AF_INET, SOCK_DGRAM)");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return base::ErrnoStatus(errno, "bind(127.0.0.1:0)");
  }
  return fd;
}

absl::StatusOr<uint16_t> LocalPort(int fd) {
  sockaddr_in addr = {};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return base::ErrnoStatus(errno, "getsockname");
  }
  return ntohs(addr.sin_port);
}

DnsAnswer AddressAnswer(absl::string_view address, uint32_t ttl) {
  absl::StatusOr<IpAddress> ip = IpAddress::Parse(address);
  if (!ip.ok()) return DnsAnswer{};
  absl::Span<const uint8_t> bytes = ip->bytes();
  return DnsAnswer{ip->is_v4() ? kDnsTypeA : kDnsTypeAaaa, ttl,
                   std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())};
}

FakeUpstream::~FakeUpstream() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_event_.get(), &one, sizeof(one));
    thread_.join();
  }
}

absl::Status FakeUpstream::Start() {
  ZYGO_ASSIGN_OR_RETURN(socket_, BindLoopbackUdp());
  ZYGO_ASSIGN_OR_RETURN(port_, LocalPort(socket_.get()));
  stop_event_.Reset(eventfd(0, EFD_CLOEXEC));
  if (!stop_event_.valid()) return base::ErrnoStatus(errno, "eventfd");
  thread_ = std::thread([this] { Serve(); });
  return absl::OkStatus();
}

void FakeUpstream::Set(absl::string_view name, uint16_t qtype, FakeAnswer answer) {
  std::lock_guard<std::mutex> lock(mu_);
  table_[{absl::AsciiStrToLower(name), qtype}] = std::move(answer);
}

void FakeUpstream::SetFallback(FakeAnswer answer) {
  std::lock_guard<std::mutex> lock(mu_);
  fallback_ = std::move(answer);
}

int FakeUpstream::QueriesFor(absl::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_name_.find(absl::AsciiStrToLower(name));
  return it == per_name_.end() ? 0 : it->second;
}

void FakeUpstream::Serve() {
  std::vector<uint8_t> buf(65536);
  while (true) {
    absl::Duration wait = absl::Seconds(1);
    const absl::Time now = absl::Now();
    for (auto it = scheduled_.begin(); it != scheduled_.end();) {
      if (it->due <= now) {
        sendto(socket_.get(), it->reply.data(), it->reply.size(), 0,
               reinterpret_cast<const sockaddr*>(it->peer.data()), it->peer.size());
        it = scheduled_.erase(it);
      } else {
        wait = std::min(wait, it->due - now);
        ++it;
      }
    }
    pollfd fds[2] = {{socket_.get(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
    if (poll(fds, 2, PollTimeoutMs(wait)) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    sockaddr_storage peer = {};
    socklen_t peer_len = sizeof(peer);
    ssize_t n = recvfrom(socket_.get(), buf.data(), buf.size(), 0,
                         reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (n > 0) HandleQuery(buf.data(), static_cast<size_t>(n), &peer, peer_len);
  }
}

void FakeUpstream::HandleQuery(const uint8_t* data, size_t size, const void* peer,
                               unsigned peer_len) {
  absl::StatusOr<DnsQuery> query = ParseDnsQuery(absl::MakeConstSpan(data, size));
  if (!query.ok()) return;
  ++queries_;
  const std::string name = LowerName(query->question.labels);
  FakeAnswer answer;
  answer.rcode = DnsRcode::kNxDomain;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++per_name_[name];
    auto it = table_.find({name, query->question.qtype});
    auto same_name = table_.lower_bound({name, 0});
    if (it != table_.end()) {
      answer = it->second;
    } else if (same_name != table_.end() && same_name->first.first == name) {
      answer = FakeAnswer{};  // the name exists with other types: NODATA
    } else if (fallback_.has_value()) {
      answer = *fallback_;
      // The fallback's addresses are of one type; answer others with NODATA.
      answer.answers.erase(
          std::remove_if(answer.answers.begin(), answer.answers.end(),
                         [&](const DnsAnswer& a) { return a.type != query->question.qtype; }),
          answer.answers.end());
    }
  }
  if (answer.drop) return;
  const auto* p = static_cast<const uint8_t*>(peer);
  scheduled_.push_back(Scheduled{absl::Now() + answer.delay,
                                 BuildDnsReply(*query, answer.rcode, answer.answers),
                                 std::vector<uint8_t>(p, p + peer_len)});
}

absl::StatusOr<DnsTestClient> DnsTestClient::Create(uint16_t server_port) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd, BindLoopbackUdp());
  sockaddr_in server = {};
  server.sin_family = AF_INET;
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  server.sin_port = htons(server_port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&server), sizeof(server)) != 0) {
    return base::ErrnoStatus(errno, "connect(127.0.0.1)");
  }
  return DnsTestClient(std::move(fd));
}

absl::Status DnsTestClient::Send(absl::Span<const uint8_t> packet) {
  if (send(socket_.get(), packet.data(), packet.size(), 0) < 0) {
    return base::ErrnoStatus(errno, "send");
  }
  return absl::OkStatus();
}

std::optional<std::vector<uint8_t>> DnsTestClient::Receive(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    pollfd fd = {socket_.get(), POLLIN, 0};
    const int ready = poll(&fd, 1, PollTimeoutMs(deadline - absl::Now()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    std::vector<uint8_t> buf(65536);
    const ssize_t n = recv(socket_.get(), buf.data(), buf.size(), 0);
    // ECONNREFUSED: an ICMP error from an earlier send; keep waiting for a datagram.
    if (n < 0) {
      if (absl::Now() >= deadline) return std::nullopt;
      continue;
    }
    buf.resize(static_cast<size_t>(n));
    return buf;
  }
}

bool DnsTestClient::HasPending() const {
  pollfd fd = {socket_.get(), POLLIN, 0};
  return poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
}

absl::StatusOr<DnsMessage> DnsTestClient::Query(uint16_t id, absl::string_view name, uint16_t qtype,
                                                absl::Duration timeout) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<uint8_t> query, BuildDnsQuery(id, name, qtype));
  ZYGO_RETURN_IF_ERROR(Send(query));
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::optional<std::vector<uint8_t>> reply = Receive(deadline - absl::Now());
    if (!reply.has_value()) return absl::NotFoundError("no reply from the resolver");
    absl::StatusOr<DnsMessage> message = ParseDnsMessage(*reply);
    if (message.ok() && message->header.id == id) return message;
  }
}

std::vector<std::string> AnswerAddresses(const DnsMessage& reply) {
  std::vector<std::string> out;
  for (const DnsRecord& record : reply.answers) {
    const int family = record.type == kDnsTypeA ? AF_INET : AF_INET6;
    absl::StatusOr<IpAddress> ip = IpAddress::FromBytes(
        family, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(record.rdata.data()),
                                    record.rdata.size()));
    out.push_back(ip.ok() ? ip->ToString() : "<bad rdata>");
  }
  return out;
}

}  // namespace zygo::net::dnstest
