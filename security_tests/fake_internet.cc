// The network escape tests' fake internet: two test namespaces, a veth pair, a fake DNS
// server, TCP listeners that never accept (the kernel completes the handshake) and sinks
// that record which UDP datagrams and ICMP echo requests arrived.
#include "security_tests/fake_internet.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "net/netns_socket.h"

namespace zygo::testing {

FakeDns::FakeDns(base::UniqueFd socket) : socket_(std::move(socket)) {
  thread_ = std::thread([this] { Serve(); });
}

FakeDns::~FakeDns() {
  stop_ = true;
  thread_.join();
}

int FakeDns::QueriesFor(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[name];
}

int FakeDns::Queries() {
  std::lock_guard<std::mutex> lock(mu_);
  int total = 0;
  for (const auto& [name, count] : counts_) total += count;
  return total;
}

void FakeDns::Serve() {
  // The socket is non-blocking: wait in poll, with a timeout so `stop_` is seen.
  while (!stop_) {
    pollfd pfd = {socket_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 50) <= 0) continue;
    uint8_t question[512];
    sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);
    const ssize_t n = recvfrom(socket_.get(), question, sizeof(question), 0,
                               reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (n >= 17) {
      Answer(question, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&peer), peer_len);
    }
  }
}

void FakeDns::Answer(const uint8_t* q, size_t n, const sockaddr* peer, socklen_t peer_len) {
  static const std::map<std::string, std::string> kTable = {{"allowed.test", kAllowedAddress},
                                                            {"other.test", kOtherAddress},
                                                            {"rebind.test", kLanAddress}};
  size_t i = 12;
  std::vector<std::string> labels;
  while (i < n && q[i] != 0 && i + 1 + q[i] <= n) {
    std::string label(reinterpret_cast<const char*>(q + i + 1), q[i]);
    for (char& c : label) c = static_cast<char>(tolower(c));
    labels.push_back(label);
    i += 1 + q[i];
  }
  if (i + 5 > n) return;
  const uint16_t qtype = static_cast<uint16_t>(q[i + 1] << 8 | q[i + 2]);
  const size_t question_end = i + 5;
  const std::string name = absl::StrJoin(labels, ".");
  {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[name]++;
  }
  std::vector<uint8_t> r(q, q + question_end);
  r[2] = 0x84 | (q[2] & 0x01);  // QR, AA, RD as asked
  r[3] = 0x80;                  // RA, NOERROR
  r[6] = r[7] = r[8] = r[9] = r[10] = r[11] = 0;
  auto it = kTable.find(name);
  if (it == kTable.end()) {
    r[3] = 0x83;  // NXDOMAIN
  } else if (qtype == 1) {
    r[7] = 1;
    const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};  // TTL 60 s
    r.insert(r.end(), rr, rr + sizeof(rr));
    in_addr addr;
    inet_pton(AF_INET, it->second.c_str(), &addr);
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&addr);
    r.insert(r.end(), bytes, bytes + 4);
  }
  sendto(socket_.get(), r.data(), r.size(), 0, peer, peer_len);
}

absl::StatusOr<std::unique_ptr<FakeInternet>> FakeInternet::Start() {
  std::unique_ptr<FakeInternet> internet(new FakeInternet());
  ZYGO_ASSIGN_OR_RETURN(internet->machine_, net::testing::TestNetns::Create());
  ZYGO_ASSIGN_OR_RETURN(internet->internet_, net::testing::TestNetns::Create());
  ZYGO_RETURN_IF_ERROR(internet->Wire());
  ZYGO_RETURN_IF_ERROR(internet->Serve());
  return internet;
}

FakeInternet::~FakeInternet() = default;

absl::Status FakeInternet::Wire() const {
  ZYGO_RETURN_IF_ERROR(machine_->Run({"ip", "link", "set", "lo", "up"}).status());
  ZYGO_RETURN_IF_ERROR(machine_
                           ->Run({"ip", "link", "add", "vm", "type", "veth", "peer", "name", "vi",
                                  "netns", absl::StrCat(internet_->pid())})
                           .status());
  std::vector<std::vector<std::string>> internet_setup = {
      {"ip", "link", "set", "lo", "up"},
      {"ip", "addr", "add", "203.0.113.1/24", "dev", "vi"},
      {"ip", "link", "set", "vi", "up"},
  };
  for (const char* address :
       {kAllowedAddress, kOtherAddress, kOtherDns, kDnsServer, kLanAddress, kMetadataAddress}) {
    internet_setup.push_back({"ip", "addr", "add", absl::StrCat(address, "/32"), "dev", "lo"});
  }
  for (const auto& argv : internet_setup) ZYGO_RETURN_IF_ERROR(internet_->Run(argv).status());
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"ip", "addr", "add", "203.0.113.2/24", "dev", "vm"},
        {"ip", "link", "set", "vm", "up"},
        {"ip", "route", "add", "default", "via", "203.0.113.1"}}) {
    ZYGO_RETURN_IF_ERROR(machine_->Run(argv).status());
  }
  return absl::OkStatus();
}

absl::Status FakeInternet::Serve() {
  for (auto [address, port] :
       std::vector<std::pair<const char*, uint16_t>>{{kAllowedAddress, 8080},
                                                     {kAllowedAddress, 8081},
                                                     {kOtherAddress, 8080},
                                                     {kLanAddress, 8080},
                                                     {kMetadataAddress, 80}}) {
    ZYGO_ASSIGN_OR_RETURN(base::UniqueFd listener,
                          net::testing::Listen(internet_->fd(), address, port));
    listeners_.push_back(std::move(listener));
  }
  for (const char* address : {kAllowedAddress, kOtherAddress, kLanAddress, kMetadataAddress}) {
    ZYGO_ASSIGN_OR_RETURN(udp_sinks_[address],
                          net::testing::BindUdp(internet_->fd(), address, 8080));
  }
  ZYGO_ASSIGN_OR_RETURN(icmp_,
                        net::OpenSocketInNetns(internet_->fd(), AF_INET, SOCK_RAW, IPPROTO_ICMP));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd dns, net::testing::BindUdp(internet_->fd(), kDnsServer, 53));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd other,
                        net::testing::BindUdp(internet_->fd(), kOtherDns, 53));
  dns_ = std::make_unique<FakeDns>(std::move(dns));
  other_dns_ = std::make_unique<FakeDns>(std::move(other));
  return absl::OkStatus();
}

void FakeInternet::Drain() {
  char packet[1500];
  for (const auto& [address, fd] : udp_sinks_) {
    while (recv(fd.get(), packet, sizeof(packet), MSG_DONTWAIT) > 0) {
    }
  }
  while (recv(icmp_.get(), packet, sizeof(packet), MSG_DONTWAIT) > 0) {
  }
}

bool FakeInternet::UdpArrived(const std::string& address, int timeout_ms) {
  auto it = udp_sinks_.find(address);
  return it != udp_sinks_.end() && net::testing::ReceivedUdp(it->second.get(), timeout_ms);
}

bool FakeInternet::IcmpEchoArrived(const std::string& address, int timeout_ms) {
  in_addr want;
  if (inet_pton(AF_INET, address.c_str(), &want) != 1) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd = {icmp_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 50) <= 0) continue;
    uint8_t packet[1500];
    const ssize_t n = recv(icmp_.get(), packet, sizeof(packet), MSG_DONTWAIT);
    if (n < static_cast<ssize_t>(sizeof(iphdr))) continue;
    const auto* ip = reinterpret_cast<const iphdr*>(packet);
    const size_t header = ip->ihl * 4u;
    // Type 8: an echo request, wherever it came from (the raw socket gets a copy).
    if (static_cast<size_t>(n) > header && packet[header] == 8 && ip->daddr == want.s_addr) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<MachineSession>> MachineSession::Start() {
  std::unique_ptr<MachineSession> session(new MachineSession());
  ZYGO_ASSIGN_OR_RETURN(session->internet_, FakeInternet::Start());
  session->host_netns_ = base::UniqueFd(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!session->host_netns_.valid()) {
    return base::ErrnoStatus(errno, "open(/proc/thread-self/ns/net)");
  }
  if (setns(session->internet_->machine().fd(), CLONE_NEWNET) != 0) {
    return base::ErrnoStatus(errno, "setns(the machine's netns)");
  }
  return session;
}

MachineSession::~MachineSession() {
  if (host_netns_.valid()) setns(host_netns_.get(), CLONE_NEWNET);
}

}  // namespace zygo::testing
