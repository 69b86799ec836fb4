// Network escapes, attempted against a fake internet: the test builds a "machine" network
// namespace (where zygo runs) joined by veth to an "internet" namespace holding a DNS
// server, TCP listeners on TEST-NET addresses, a "LAN" host (10.0.0.5) and a metadata
// server (169.254.169.254), all from testing/fake_internet.h. No packet of this test
// leaves those namespaces.
//
// Inside the sandbox, /usr/bin/python3 (host image) resolves and connects; every refusal
// comes after a control that shows the same probe getting through.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/internal/test_netns.h"
#include "security_tests/egress_attempts.h"
#include "testing/fake_internet.h"
#include "security_tests/machine_suite.h"
#include "security_tests/network_probe.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kMarker[] = "ZYGO_NET_TEST_MARKER=c0ffee5a";

// zygo (forked by the harness from this thread) runs on the fake internet's machine.
class NetworkEscapeTest : public MachineSuite {
 protected:
  // Runs the probe in a sandbox with `flags`; returns target -> verdict.
  std::map<std::string, std::string> Probe(const std::vector<std::string>& flags,
                                           const std::vector<std::string>& targets,
                                           RunResult* raw = nullptr) {
    std::vector<std::string> argv = {"/usr/bin/python3", "-c", kNetworkProbe};
    argv.insert(argv.end(), targets.begin(), targets.end());
    RunOptions options;
    options.env = {absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"), kMarker};
    RunResult result = RunZygo(flags, "host", argv, options);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::map<std::string, std::string> verdicts = ParseProbeVerdicts(result.out);
    // Every run leaves nothing behind: no pasta (it carries the marker in its
    // environment), no resolver helper, no cgroup.
    EXPECT_THAT(ProcessesMatching(kMarker), IsEmpty());
    EXPECT_THAT(LeftoverCgroups(), IsEmpty());
    if (raw != nullptr) *raw = result;
    return verdicts;
  }

  // The control for the ICMP refusals: the same raw-socket echo from the machine itself
  // (the test runs as root) arrives.
  static void ExpectIcmpFromTheMachineArrives(const char* address) {
    internet_->Drain();
    RunResult control =
        RunOnHost({"/usr/bin/python3", "-c", kNetworkProbe, absl::StrCat("raw@", address)});
    EXPECT_EQ(control.out, absl::StrCat("raw@", address, " sent\n")) << control.err;
    EXPECT_TRUE(internet_->IcmpEchoArrived(address));
  }
};

TEST_F(NetworkEscapeTest, EgressReachesOnlyAllowlistedNamesAndPorts) {
  ExpectIcmpFromTheMachineArrives(kOtherAddress);
  internet_->Drain();
  const EgressBaseline before = TakeEgressBaseline(*internet_);
  std::map<std::string, std::string> v = Probe(EgressFlags(), EgressTargets());
  ExpectOnlyAllowlistedEgress(v, *internet_, before);
}

TEST_F(NetworkEscapeTest, FullReachesPublicAddressesButNotPrivateOnes) {
  int direct_before = internet_->other_dns().Queries();
  std::map<std::string, std::string> v =
      Probe({"--net", "full"},
            {"198.51.100.20:8080", "dns@198.51.100.53", "10.0.0.5:8080", "169.254.169.254:80"});
  EXPECT_EQ(v["198.51.100.20:8080"], "connected");  // the control
  EXPECT_EQ(v["dns@198.51.100.53"], "answered");
  EXPECT_GT(internet_->other_dns().Queries(), direct_before);
  EXPECT_EQ(v["10.0.0.5:8080"], "timeout");
  EXPECT_EQ(v["169.254.169.254:80"], "timeout");
  // UDP and ICMP, in a second sandbox.
  ExpectIcmpFromTheMachineArrives(kOtherAddress);
  internet_->Drain();
  v = Probe({"--net", "full"},
            {"udp@198.51.100.20:8080", "udp@10.0.0.5:8080", "udp@169.254.169.254:8080",
             "ping@198.51.100.20", "raw@198.51.100.20"});
  EXPECT_EQ(v["udp@198.51.100.20:8080"], "sent");  // the control
  EXPECT_TRUE(internet_->UdpArrived(kOtherAddress));
  for (const char* address : {kLanAddress, kMetadataAddress}) {
    EXPECT_EQ(v[absl::StrCat("udp@", address, ":8080")], "error 1") << address;  // EPERM
    EXPECT_FALSE(internet_->UdpArrived(address)) << address;
  }
  EXPECT_EQ(v["ping@198.51.100.20"], "error 13");  // EACCES: ping sockets are off
  EXPECT_EQ(v["raw@198.51.100.20"], "error 1");    // EPERM: no CAP_NET_RAW
  EXPECT_FALSE(internet_->IcmpEchoArrived(kOtherAddress));
}

// Names resolve in full mode through Zygo's resolver (the machine's own resolv.conf names
// a nameserver the sandbox could not reach), any name, but never to a private address.
TEST_F(NetworkEscapeTest, FullResolvesAnyNameButNeverToAPrivateAddress) {
  FakeDns& dns = internet_->dns();
  const int allowed_before = dns.QueriesFor("allowed.test");
  const int other_before = dns.QueriesFor("other.test");
  const int rebind_before = dns.QueriesFor("rebind.test");
  std::map<std::string, std::string> v = Probe(
      {"--net", "full"},
      {"resolv", "allowed.test:8080", "other.test:8080", "rebind.test:8080", "dns@127.0.0.53"});
  EXPECT_EQ(v["resolv"], "127.0.0.53");
  // The controls: both names resolve through the upstream and their addresses connect.
  EXPECT_EQ(v["allowed.test:8080"], "connected");
  EXPECT_EQ(v["other.test:8080"], "connected");
  EXPECT_GT(dns.QueriesFor("allowed.test"), allowed_before);
  EXPECT_GT(dns.QueriesFor("other.test"), other_before);
  EXPECT_EQ(v["dns@127.0.0.53"], "answered");
  // The upstream answered 10.0.0.5; the resolver dropped it (DNS rebinding).
  EXPECT_EQ(v["rebind.test:8080"], "noaddr");
  EXPECT_GT(dns.QueriesFor("rebind.test"), rebind_before);
}

TEST_F(NetworkEscapeTest, NoneHasOnlyLoopback) {
  std::map<std::string, std::string> v =
      Probe({"--net", "none"}, {"interfaces", "198.51.100.20:8080"});
  EXPECT_EQ(v["interfaces"], "lo");
  EXPECT_EQ(v["198.51.100.20:8080"], "unreachable");
  // The control: the same target from the machine itself.
  EXPECT_EQ(net::testing::TryConnect(internet_->machine().fd(), "198.51.100.20", 8080).result,
            net::testing::ConnectResult::kConnected);
}

TEST_F(NetworkEscapeTest, HostNeedsAllowHostNet) {
  RunResult result = RunZygo({"--net", "host"}, "host", {"/bin/true"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_THAT(result.err, HasSubstr("--allow-host-net"));
  // The control: with the flag it runs.
  EXPECT_EQ(RunZygo({"--net", "host", "--allow-host-net"}, "host", {"/bin/true"}).exit_code, 0);
}

TEST_F(NetworkEscapeTest, MissingPastaRefusesWithOneLine) {
  RunOptions options;
  // An upstream, so the refusal cannot come from a host resolv.conf without nameservers.
  options.env = {"ZYGO_PASTA=/nonexistent/pasta",
                 absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"), kMarker};
  RunResult result = RunZygo({"--net", "full"}, "host", {"/bin/true"}, options);
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_THAT(result.err, HasSubstr("passt"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

}  // namespace
}  // namespace zygo::testing

namespace zygo::testing {
namespace {

// Argument 0 of a process, or "".
std::string Argv0(int pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(file, argv0, '\0');
  return argv0;
}

// Kills zygo-net (SIGKILL) once `ready` says so, from a thread; true if it did.
bool KillHelperWhen(const std::function<bool()>& ready, std::atomic<bool>* stop) {
  for (int i = 0; i < 400 && !*stop; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!ready()) continue;
    for (int pid : ProcessesMatching(kMarker)) {
      if (absl::EndsWith(Argv0(pid), "/zygo-net")) {
        kill(pid, SIGKILL);
        return true;
      }
    }
  }
  return false;
}

// pasta runs under PR_SET_PDEATHSIG of the helper that started it: killing the helper
// at any moment, while pasta starts or once the command runs, leaves no pasta behind.
TEST_F(NetworkEscapeTest, AKilledNetworkHelperLeavesNoPasta) {
  RunOptions options;
  options.env = {absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"), kMarker};
  const std::vector<std::string> command = {"/usr/bin/python3", "-c",
                                            "import time; time.sleep(3)  # zygo-sleeper"};
  auto sleeper_runs = [] {
    for (int pid : ProcessesMatching("zygo-sleeper")) {
      if (Argv0(pid) == "/usr/bin/python3") return true;
    }
    return false;
  };
  struct Case {
    const char* when;
    std::function<bool()> ready;
    std::vector<int> exit_codes;  // what zygo may answer
  };
  for (const Case& c : std::vector<Case>{
           // While pasta starts: zygo refuses the run (125), or it was already up (0).
           {"at start", [] { return true; }, {0, 125}},
           // Mid-run: the sandbox keeps its network up to here; the run ends normally.
           {"mid-run", sleeper_runs, {0}},
       }) {
    std::atomic<bool> stop{false};
    bool killed = false;
    std::thread killer([&] { killed = KillHelperWhen(c.ready, &stop); });
    RunResult result = RunZygo({"--net", "full"}, "host", command, options);
    stop = true;
    killer.join();
    ASSERT_TRUE(killed) << c.when << ": the helper was never seen, so nothing was tested";
    EXPECT_THAT(c.exit_codes, ::testing::Contains(result.exit_code)) << c.when << result.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_THAT(ProcessesMatching(kMarker), IsEmpty()) << c.when;
    EXPECT_THAT(LeftoverCgroups(), IsEmpty()) << c.when;
  }
  // A killed helper cannot remove its pid-file directory; the next run sweeps it.
  ASSERT_EQ(RunZygo({"--net", "full"}, "host", {"/bin/true"}, options).exit_code, 0);
  std::vector<std::string> stale;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp")) {
    std::string name = entry.path().filename();
    if (name.rfind("zygo-pasta-", 0) != 0) continue;
    int owner = atoi(name.c_str() + strlen("zygo-pasta-"));
    if (owner <= 0 || kill(owner, 0) != 0) stale.push_back(name);
  }
  EXPECT_THAT(stale, IsEmpty());
}

}  // namespace
}  // namespace zygo::testing
