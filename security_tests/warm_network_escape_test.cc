// Network escapes from warm functions: the supervisor runs on the fake internet's "machine"
// (testing/fake_internet.h), serves egress and full Python functions whose handler
// attempts one network action per request, and every refusal follows a control that shows
// the same handler getting through. Once the supervisor is stopped nothing of it remains.
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/internal/test_netns.h"
#include "nlohmann/json.hpp"
#include "testing/fake_internet.h"
#include "security_tests/leftover_oracle.h"
#include "security_tests/supervisor_options.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// The function's handler: one action per event, answered as {"result": WHAT} where WHAT
// is connected/answered/sent/ok, "timeout", "nxdomain", an EAI_* or errno name, or the
// exception. Run as a script (`probe.py EVENT_JSON`) it prints the same for a control.
constexpr char kProbe[] = R"(import errno, json, socket, struct, sys

TIMEOUT = 1.5


def _what(e):
    if isinstance(e, socket.gaierror):
        if e.errno == socket.EAI_NONAME:
            return 'nxdomain'
        names = [n for n in dir(socket) if n.startswith('EAI_') and getattr(socket, n) == e.errno]
        return names[0] if names else 'gaierror %d' % e.errno
    if isinstance(e, TimeoutError):
        return 'timeout'
    if isinstance(e, OSError) and e.errno in errno.errorcode:
        return errno.errorcode[e.errno]
    return '%s: %s' % (type(e).__name__, e)


def _address(host, port, kind):
    return socket.getaddrinfo(host, port, socket.AF_INET, kind)[0][4]


def _question(name):
    q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split('.'):
        q += bytes([len(label)]) + label.encode()
    return q + b'\0' + struct.pack('>HH', 1, 1)


def _attempt(event):
    action = event['action']
    if action == 'resolve':
        infos = socket.getaddrinfo(event['name'], None, socket.AF_INET, socket.SOCK_STREAM)
        return {'result': 'ok', 'addresses': sorted({info[4][0] for info in infos})}
    if action == 'connect':
        address = _address(event['host'], event['port'], socket.SOCK_STREAM)
        socket.create_connection(address, timeout=TIMEOUT).close()
        return {'result': 'connected'}
    if action == 'dns':
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(TIMEOUT)
            s.sendto(_question(event['name']), (event['server'], 53))
            s.recvfrom(512)
        return {'result': 'answered'}
    if action == 'udp':
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b'zygo', _address(event['host'], event['port'], socket.SOCK_DGRAM))
        return {'result': 'sent'}
    if action == 'icmp':
        kind = socket.SOCK_RAW if event['socket'] == 'raw' else socket.SOCK_DGRAM
        with socket.socket(socket.AF_INET, kind, socket.IPPROTO_ICMP) as s:
            # Echo request, id 1, sequence 1 (a ping socket sets its own id and checksum).
            s.sendto(bytes([8, 0, 0xf7, 0xfd, 0, 1, 0, 1]), (event['host'], 0))
        return {'result': 'sent'}
    return {'result': 'unknown action %r' % action}


def main(event):
    try:
        return _attempt(event)
    except Exception as e:
        return {'result': _what(e)}


if __name__ == '__main__':
    print(json.dumps(main(json.loads(sys.argv[1]))))
)";

nlohmann::json Resolve(const std::string& name) { return {{"action", "resolve"}, {"name", name}}; }
nlohmann::json Connect(const std::string& host, int port) {
  return {{"action", "connect"}, {"host", host}, {"port", port}};
}
nlohmann::json Udp(const std::string& host, int port) {
  return {{"action", "udp"}, {"host", host}, {"port", port}};
}
nlohmann::json Dns(const std::string& server, const std::string& name) {
  return {{"action", "dns"}, {"server", server}, {"name", name}};
}
nlohmann::json Icmp(const std::string& host, const std::string& socket) {
  return {{"action", "icmp"}, {"host", host}, {"socket", socket}};
}

class WarmNetworkEscapeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0 || access("/usr/bin/pasta", X_OK) != 0) return;
    absl::StatusOr<std::unique_ptr<FakeInternet>> internet = FakeInternet::Start();
    if (!internet.ok()) {
      setup_error_ = new std::string(internet.status().ToString());
      return;
    }
    internet_ = internet->release();
    // Ping sockets on, as on most hosts, in the machine namespace only (ours; the sysctl
    // is per namespace): the ICMP controls below use one, and pasta could forward a
    // sandbox's echo requests through one.
    absl::Status ping = internet_->machine()
                            .Run({"sysctl", "-w", "net.ipv4.ping_group_range=0 2147483647"})
                            .status();
    if (!ping.ok()) setup_error_ = new std::string(ping.ToString());
  }

  static void TearDownTestSuite() { delete internet_; }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, nftables, cgroups)";
    if (access("/usr/bin/pasta", X_OK) != 0) GTEST_SKIP() << "needs pasta (passt package)";
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
    ASSERT_NE(internet_, nullptr);
    // Short: the sockets' paths must fit in sun_path.
    char dir[] = "/tmp/warmnet-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr) << strerror(errno);
    dir_ = dir;
    // Unique to this supervisor, so that a concurrent run of this test is not mistaken for
    // ours (the directory's name has a fixed length: no marker is a prefix of another).
    marker_ = absl::StrCat("ZYGO_WARM_NET_TEST_MARKER=", dir_, "/");
    ASSERT_EQ(mkdir((dir_ + "/code").c_str(), 0755), 0);
    std::ofstream(dir_ + "/code/probe.py") << kProbe;
    // Its environment carries marker_; it joins the machine namespace (this thread stays
    // on the host).
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.dir = dir_;
    options.env.push_back(marker_);
    options.netns_fd = internet_->machine().fd();
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> supervisor =
        SupervisorProcess::Start(options);
    if (!supervisor.ok() && absl::StrContains(supervisor.status().message(), "no usable cgroups")) {
      GTEST_SKIP() << supervisor.status();
    }
    ASSERT_TRUE(supervisor.ok()) << supervisor.status();
    supervisor_ = *std::move(supervisor);
  }

  void TearDown() override {
    supervisor_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Registers a python function running probe.py with `net` as its [net] table.
  void Up(const std::string& name, const std::string& net) {
    const std::string spec =
        absl::StrCat("name = \"", name, "\"\nruntime = \"python\"\nentry = \"probe.py:main\"\n",
                     "cold_after = \"0\"\n[limits]\ntimeout = \"20s\"\n[net]\n", net);
    absl::Status up = supervisor_->Register(name, spec, dir_ + "/code");
    ASSERT_TRUE(up.ok()) << up << "\n" << supervisor_->Log();
  }

  // One request to `function`: what its handler saw ("connected", "EPERM", ...), or why
  // the request itself failed.
  std::string Attempt(const std::string& function, const nlohmann::json& event,
                      nlohmann::json* result = nullptr) {
    absl::StatusOr<nlohmann::json> reply = supervisor_->Exec(function, event);
    if (!reply.ok()) return absl::StrCat("request failed: ", reply.status().ToString());
    if (!reply->value("ok", false) || !(*reply)["result"].is_object()) {
      return absl::StrCat("handler failed: ", reply->dump());
    }
    if (result != nullptr) *result = (*reply)["result"];
    return (*reply)["result"].value("result", "no result");
  }

  // The same probe run as root on the machine itself, outside any sandbox.
  std::string AttemptOnMachine(const nlohmann::json& event) {
    absl::StatusOr<std::string> out =
        internet_->machine().Run({"/usr/bin/python3", dir_ + "/code/probe.py", event.dump()});
    if (!out.ok()) return out.status().ToString();
    nlohmann::json result = nlohmann::json::parse(*out, nullptr, /*allow_exceptions=*/false);
    return result.is_object() ? result.value("result", *out) : *out;
  }

  // No ICMP echo leaves `function`'s sandbox for `address`, neither from a ping socket
  // nor from a raw one; the same probe on the machine gets its echo through.
  void ExpectNoIcmp(const std::string& function, const char* address) {
    for (const char* socket : {"ping", "raw"}) {
      SCOPED_TRACE(absl::StrCat("ICMP echo to ", address, " from a ", socket, " socket"));
      internet_->Drain();
      ASSERT_EQ(AttemptOnMachine(Icmp(address, socket)), "sent");
      ASSERT_TRUE(internet_->IcmpEchoArrived(address));
      // No CAP_NET_RAW for a raw socket, and ping sockets are off in the sandbox's own
      // netns; in egress the firewall would drop an echo after that.
      EXPECT_EQ(Attempt(function, Icmp(address, socket)),
                std::string(socket) == "raw" ? "EPERM" : "EACCES");
      EXPECT_FALSE(internet_->IcmpEchoArrived(address));
    }
  }

  void EgressRound(const std::string& function);
  void FullRound(const std::string& function);
  void FullDnsRound(const std::string& function);
  void StopAndExpectNothingLeft(size_t functions);

  static inline FakeInternet* internet_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
  std::string dir_;
  std::string marker_;
  std::unique_ptr<SupervisorProcess> supervisor_;
};

// Every attempt once, against a function allowed allowed.test:8080 and rebind.test:8080.
void WarmNetworkEscapeTest::EgressRound(const std::string& function) {
  FakeDns& dns = internet_->dns();
  const int other_before = dns.QueriesFor("other.test");
  const int direct_before = dns.QueriesFor("direct.test") + internet_->other_dns().Queries();

  // Controls: the allowed name resolves (through the upstream) and connects, its address
  // takes a datagram on the allowed port, and the sandbox's own resolver answers.
  nlohmann::json resolved;
  EXPECT_EQ(Attempt(function, Resolve("allowed.test"), &resolved), "ok");
  EXPECT_EQ(resolved["addresses"], nlohmann::json::array({kAllowedAddress}));
  EXPECT_EQ(Attempt(function, Connect("allowed.test", 8080)), "connected");
  EXPECT_EQ(Attempt(function, Dns("127.0.0.53", "allowed.test")), "answered");
  internet_->Drain();
  EXPECT_EQ(Attempt(function, Udp("allowed.test", 8080)), "sent");
  EXPECT_TRUE(internet_->UdpArrived(kAllowedAddress));

  // A name off the list: NXDOMAIN, and the upstream never heard of it.
  EXPECT_EQ(Attempt(function, Resolve("other.test")), "nxdomain");
  EXPECT_EQ(dns.QueriesFor("other.test"), other_before);
  // An allowed name whose answer is a LAN address: no address comes back.
  EXPECT_EQ(Attempt(function, Resolve("rebind.test")), "EAI_NODATA");
  // TCP: a public address no name admitted, the allowed address on another port, the LAN,
  // the metadata server. A dropped SYN is retried until the probe gives up.
  EXPECT_EQ(Attempt(function, Connect(kOtherAddress, 8080)), "timeout");
  EXPECT_EQ(Attempt(function, Connect("allowed.test", 8081)), "timeout");
  EXPECT_EQ(Attempt(function, Connect(kLanAddress, 8080)), "timeout");
  EXPECT_EQ(Attempt(function, Connect(kMetadataAddress, 80)), "timeout");
  // DNS straight to the upstream, or to another server: dropped before it leaves.
  EXPECT_EQ(Attempt(function, Dns(kDnsServer, "direct.test")), "EPERM");
  EXPECT_EQ(Attempt(function, Dns(kOtherDns, "direct.test")), "EPERM");
  EXPECT_EQ(dns.QueriesFor("direct.test") + internet_->other_dns().Queries(), direct_before);
  // UDP to addresses nothing admitted.
  for (const char* address : {kOtherAddress, kLanAddress, kMetadataAddress}) {
    internet_->Drain();
    EXPECT_EQ(Attempt(function, Udp(address, 8080)), "EPERM") << address;
    EXPECT_FALSE(internet_->UdpArrived(address)) << address;
  }
  ExpectNoIcmp(function, kOtherAddress);
}

// Names through the sandbox's resolv.conf, which names Zygo's resolver at 127.0.0.53 (the
// machine's own resolv.conf names a nameserver no sandbox reaches): any name resolves
// through the upstream and connects; a name answering a LAN address gets no address.
void WarmNetworkEscapeTest::FullDnsRound(const std::string& function) {
  FakeDns& dns = internet_->dns();
  const int other_before = dns.QueriesFor("other.test");
  const int rebind_before = dns.QueriesFor("rebind.test");
  nlohmann::json resolved;
  EXPECT_EQ(Attempt(function, Resolve("allowed.test"), &resolved), "ok");
  EXPECT_EQ(resolved["addresses"], nlohmann::json::array({kAllowedAddress}));
  EXPECT_EQ(Attempt(function, Resolve("other.test"), &resolved), "ok");
  EXPECT_EQ(resolved["addresses"], nlohmann::json::array({kOtherAddress}));
  EXPECT_GT(dns.QueriesFor("other.test"), other_before);
  EXPECT_EQ(Attempt(function, Connect("allowed.test", 8080)), "connected");
  EXPECT_EQ(Attempt(function, Connect("other.test", 8080)), "connected");
  EXPECT_EQ(Attempt(function, Dns("127.0.0.53", "allowed.test")), "answered");
  // The upstream was asked and answered 10.0.0.5; the resolver dropped it.
  EXPECT_EQ(Attempt(function, Resolve("rebind.test")), "EAI_NODATA");
  EXPECT_GT(dns.QueriesFor("rebind.test"), rebind_before);
}

// Every attempt once, against a function with net.mode = "full".
void WarmNetworkEscapeTest::FullRound(const std::string& function) {
  const int direct_before = internet_->other_dns().QueriesFor("direct.test");
  // Controls: a public address takes TCP, UDP and DNS.
  EXPECT_EQ(Attempt(function, Connect(kOtherAddress, 8080)), "connected");
  EXPECT_EQ(Attempt(function, Dns(kOtherDns, "direct.test")), "answered");
  EXPECT_GT(internet_->other_dns().QueriesFor("direct.test"), direct_before);
  internet_->Drain();
  EXPECT_EQ(Attempt(function, Udp(kOtherAddress, 8080)), "sent");
  EXPECT_TRUE(internet_->UdpArrived(kOtherAddress));
  FullDnsRound(function);
  // Private and link-local ranges stay closed.
  EXPECT_EQ(Attempt(function, Connect(kLanAddress, 8080)), "timeout");
  EXPECT_EQ(Attempt(function, Connect(kMetadataAddress, 80)), "timeout");
  for (const char* address : {kLanAddress, kMetadataAddress}) {
    internet_->Drain();
    EXPECT_EQ(Attempt(function, Udp(address, 8080)), "EPERM") << address;
    EXPECT_FALSE(internet_->UdpArrived(address)) << address;
  }
  ExpectNoIcmp(function, kOtherAddress);
}

// SIGTERM to the supervisor, then: every process it started is gone (agents, zygo-net,
// pasta), no one holds the sandboxes' network namespaces, and its cgroups are removed.
void WarmNetworkEscapeTest::StopAndExpectNothingLeft(size_t functions) {
  const int pid = supervisor_->pid();
  const std::string machine_netns = NetnsOf(internet_->machine().pid());
  const std::string cgroup_prefix = absl::StrCat("zygo-", pid, "-");
  // Seen while it runs, so that the checks below cannot pass on an empty list.
  TreeSnapshot started = TreeSnapshot::Take(pid, marker_);
  const std::set<std::string> netns = started.NetnsExcept(machine_netns);
  EXPECT_THAT(started.Commands(), Contains(HasSubstr("/.zygo-agent")));
  EXPECT_THAT(started.Commands(), Contains(HasSubstr("/zygo-net ")));
  EXPECT_THAT(started.Commands(), Contains(HasSubstr("pasta ")));
  EXPECT_THAT(netns, SizeIs(functions));  // one per zygote, shared by its requests
  EXPECT_THAT(CgroupsNamed(cgroup_prefix), Not(IsEmpty()));

  const absl::Status stopped = supervisor_->Stop(std::chrono::seconds(30));
  EXPECT_TRUE(stopped.ok()) << stopped;
  // The supervisor has waited for its zygotes and helpers; allow the kernel a moment to
  // finish tearing down what it reaps asynchronously.
  auto leftovers = [&] {
    std::vector<std::string> left = started.StillRunning();
    for (int other : ProcessesMatching(marker_)) left.push_back(absl::StrCat(other, " (marker)"));
    for (const std::string& ns : netns) {
      for (const std::string& holder : NetnsHolders(ns)) left.push_back(ns + " " + holder);
    }
    for (const std::string& cgroup : LeftoverCgroups()) {
      if (absl::StrContains(cgroup, "/" + cgroup_prefix)) left.push_back(cgroup);
    }
    return left;
  };
  std::vector<std::string> left = leftovers();
  for (int i = 0; i < 40 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = leftovers();
  }
  EXPECT_THAT(left, IsEmpty());
}

TEST_F(WarmNetworkEscapeTest, EgressFunctionReachesOnlyItsAllowlist) {
  Up("egress", "mode = \"egress\"\nallow = [\"allowed.test:8080\", \"rebind.test:8080\"]\n");
  Up("open", "mode = \"full\"\n");
  {
    SCOPED_TRACE("first pass");
    EgressRound("egress");
  }
  // Its neighbour reaches what "egress" may not, while both are warm: the network belongs
  // to the function (its zygote), not to the supervisor.
  EXPECT_EQ(Attempt("open", Connect(kOtherAddress, 8080)), "connected");
  {
    SCOPED_TRACE("second pass: new requests, the same zygote and firewall");
    EgressRound("egress");
  }
  StopAndExpectNothingLeft(2);
}

TEST_F(WarmNetworkEscapeTest, FullFunctionReachesPublicAddressesButNotPrivateOnes) {
  Up("open", "mode = \"full\"\n");
  {
    SCOPED_TRACE("first pass");
    FullRound("open");
  }
  {
    SCOPED_TRACE("second pass");
    FullRound("open");
  }
  StopAndExpectNothingLeft(1);
}

}  // namespace
}  // namespace zygo::testing
