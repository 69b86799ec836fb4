// The fake internet: two test namespaces, a veth pair, fake DNS servers, TCP servers, and
// sinks that record which UDP datagrams and ICMP echo requests arrived.
#include "testing/fake_internet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "net/netns_socket.h"

namespace zygo::testing {
namespace {

// Moves the calling thread into the network namespace `target`; returns the one it was in.
absl::StatusOr<base::UniqueFd> EnterNetns(int target) {
  base::UniqueFd own(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) return base::ErrnoStatus(errno, "open(/proc/thread-self/ns/net)");
  if (setns(target, CLONE_NEWNET) != 0) {
    return base::ErrnoStatus(errno, "setns(the machine's network namespace)");
  }
  return own;
}

}  // namespace

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
  for (const char* address : {kAllowedAddress, kOtherAddress, kOtherDns, kDnsServer, kLanAddress,
                              kMetadataAddress, kMirrorAddress}) {
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
  std::vector<std::pair<base::UniqueFd, TcpService>> listeners;
  for (auto [address, port, service] : std::vector<std::tuple<const char*, uint16_t, TcpService>>{
           {kAllowedAddress, kAllowedPort, TcpService::kAcceptAndClose},
           {kAllowedAddress, kSourcePort, TcpService::kByteSource},
           {kOtherAddress, 8080, TcpService::kAcceptAndClose},
           {kLanAddress, 8080, TcpService::kAcceptAndClose},
           {kMetadataAddress, 80, TcpService::kAcceptAndClose}}) {
    ZYGO_ASSIGN_OR_RETURN(base::UniqueFd listener,
                          net::testing::Listen(internet_->fd(), address, port));
    listeners.emplace_back(std::move(listener), service);
  }
  tcp_ = std::make_unique<FakeTcpServers>(std::move(listeners));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd mirror,
                        net::testing::Listen(internet_->fd(), kMirrorAddress, 80));
  mirror_ = std::make_unique<FakeHttpFiles>(std::move(mirror));
  for (const char* address : {kAllowedAddress, kOtherAddress, kLanAddress, kMetadataAddress}) {
    ZYGO_ASSIGN_OR_RETURN(udp_sinks_[address],
                          net::testing::BindUdp(internet_->fd(), address, 8080));
  }
  ZYGO_ASSIGN_OR_RETURN(icmp_,
                        net::OpenSocketInNetns(internet_->fd(), AF_INET, SOCK_RAW, IPPROTO_ICMP));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd dns, net::testing::BindUdp(internet_->fd(), kDnsServer, 53));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd other,
                        net::testing::BindUdp(internet_->fd(), kOtherDns, 53));
  const std::map<std::string, std::string> records = {{kAllowedName, kAllowedAddress},
                                                      {"other.test", kOtherAddress},
                                                      {"rebind.test", kLanAddress},
                                                      {kMirrorName, kMirrorAddress}};
  dns_ = std::make_unique<FakeDns>(std::move(dns), records);
  other_dns_ = std::make_unique<FakeDns>(std::move(other), records);
  return absl::OkStatus();
}

absl::Status FakeInternet::InMachine(const std::function<absl::Status()>& start) const {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd own, EnterNetns(machine_->fd()));
  absl::Status started = start();
  if (setns(own.get(), CLONE_NEWNET) != 0) {
    return base::ErrnoStatus(errno, "setns(back to the caller's network namespace)");
  }
  return started;
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
  ZYGO_ASSIGN_OR_RETURN(session->host_netns_, EnterNetns(session->internet_->machine().fd()));
  return session;
}

MachineSession::~MachineSession() {
  if (host_netns_.valid()) setns(host_netns_.get(), CLONE_NEWNET);
}

}  // namespace zygo::testing
