// The fake internet the network escape tests attack and `zygo bench net` measures on: a
// "machine" network namespace (where zygo or the supervisor runs) joined by veth to an
// "internet" namespace with DNS servers, TCP servers and UDP sinks on TEST-NET addresses, a
// LAN host, a metadata server and a Debian mirror, and a record of what arrived. Needs
// root.
#ifndef ZYGO_TESTING_FAKE_INTERNET_H_
#define ZYGO_TESTING_FAKE_INTERNET_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"
#include "net/internal/test_netns.h"
#include "testing/fake_dns.h"
#include "testing/fake_http_files.h"
#include "testing/fake_tcp_servers.h"

namespace zygo::testing {

// The internet's addresses, all on the internet namespace's `lo`. The last four also take
// UDP on port 8080 (see FakeInternet::UdpArrived).
inline constexpr char kDnsServer[] = "192.0.2.53";    // the upstream ZYGO_DNS_UPSTREAM names
inline constexpr char kOtherDns[] = "198.51.100.53";  // a DNS server a sandbox must not reach
inline constexpr char kAllowedName[] = "allowed.test";
inline constexpr char kAllowedAddress[] = "198.51.100.10";     // allowed.test; TCP 8080, 8081
inline constexpr int kAllowedPort = 8080;                      // accepts and closes
inline constexpr int kSourcePort = 8081;                       // a byte source (FakeTcpServers)
inline constexpr char kOtherAddress[] = "198.51.100.20";       // other.test; TCP 8080
inline constexpr char kLanAddress[] = "10.0.0.5";              // rebind.test; TCP 8080
inline constexpr char kMetadataAddress[] = "169.254.169.254";  // TCP 80
// A Debian mirror under the real mirror's name (test images' apt sources name it): the
// fake DNS servers answer kMirrorName with kMirrorAddress, whose port 80 serves the
// files of FakeInternet::mirror().
inline constexpr char kMirrorName[] = "deb.debian.org";
inline constexpr char kMirrorAddress[] = "198.51.100.80";

// Both namespaces, wired, with the servers up. The namespaces are held by processes that
// die with this object or with the test (net/internal/test_netns.h); nothing is mounted
// under /run/netns, and no packet leaves the two namespaces.
class FakeInternet {
 public:
  // The machine reaches the internet through 203.0.113.1 (its default route).
  static absl::StatusOr<std::unique_ptr<FakeInternet>> Start();
  ~FakeInternet();
  FakeInternet(const FakeInternet&) = delete;
  FakeInternet& operator=(const FakeInternet&) = delete;

  const net::testing::TestNetns& machine() const { return *machine_; }
  const net::testing::TestNetns& internet() const { return *internet_; }
  FakeDns& dns() { return *dns_; }              // at kDnsServer:53
  FakeDns& other_dns() { return *other_dns_; }  // at kOtherDns:53
  FakeHttpFiles& mirror() { return *mirror_; }  // at kMirrorAddress:80
  // TCP: kAllowedAddress 8080, kOtherAddress 8080, kLanAddress 8080 and kMetadataAddress 80
  // accept and close; kAllowedAddress kSourcePort is a byte source (FakeTcpServers).

  // What arrived: UDP sockets listen on port 8080 of kAllowedAddress, kOtherAddress,
  // kLanAddress and kMetadataAddress, and a raw socket sees every ICMP packet coming in.
  // Drain() forgets what came so far; each check waits up to `timeout_ms`.
  void Drain();
  bool UdpArrived(const std::string& address, int timeout_ms = 300);
  bool IcmpEchoArrived(const std::string& address, int timeout_ms = 500);

  // Runs `start` with the calling thread in the machine namespace, so that what it forks
  // (a supervisor) lives there for good; the thread is back in its own namespace after.
  absl::Status InMachine(const std::function<absl::Status()>& start) const;

 private:
  FakeInternet() = default;
  absl::Status Wire() const;
  absl::Status Serve();

  std::unique_ptr<net::testing::TestNetns> machine_;
  std::unique_ptr<net::testing::TestNetns> internet_;
  std::unique_ptr<FakeTcpServers> tcp_;
  std::unique_ptr<FakeHttpFiles> mirror_;
  std::map<std::string, base::UniqueFd> udp_sinks_;  // address -> socket on port 8080
  base::UniqueFd icmp_;                              // raw, IPPROTO_ICMP
  std::unique_ptr<FakeDns> dns_;
  std::unique_ptr<FakeDns> other_dns_;
};

// A FakeInternet whose machine the calling thread has joined, for a suite in which this
// process plays the machine: zygo, python and supervisors it forks then run there. The
// destructor returns the thread to the namespace it came from, then ends the internet.
class MachineSession {
 public:
  static absl::StatusOr<std::unique_ptr<MachineSession>> Start();
  ~MachineSession();
  MachineSession(const MachineSession&) = delete;
  MachineSession& operator=(const MachineSession&) = delete;

  FakeInternet& internet() { return *internet_; }

 private:
  MachineSession() = default;

  std::unique_ptr<FakeInternet> internet_;
  base::UniqueFd host_netns_;  // where the thread was before
};

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_FAKE_INTERNET_H_
