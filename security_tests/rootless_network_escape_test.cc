// Rootless networking, attempted: `zygo run --net egress|full` as an ordinary user
// (zygo-rootless) against the fake internet of testing/fake_internet.h. Rootless,
// zygo-net cannot setns into the sandbox's network namespace; it opens the nftables and
// resolver sockets from a child that joined the sandbox's user namespace first
// (net/netns_socket.h). These tests show the firewall is there all the same: every refusal
// of the root tests, each after its control.
//
// pasta, rootless, opens /dev/net/tun itself. Debian ships that node 0666; some hosts make
// it 0600. The test runs in a private mount namespace of its own and binds nodes of both
// modes over /dev/net/tun there, so the host's node is never changed.
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security_tests/egress_attempts.h"
#include "testing/fake_internet.h"
#include "security_tests/network_probe.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kMarker[] = "ZYGO_ROOTLESS_NET_MARKER=5eed1e55";
constexpr char kUser[] = "zygo-rootless";

class RootlessNetworkEscapeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    if (access("/usr/bin/pasta", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) return;
    setup_error_ = new std::string(Prepare());
  }

  // Everything the suite needs; "" when ready, else what failed.
  static std::string Prepare() {
    if (getpwnam(kUser) == nullptr &&
        system("/usr/sbin/useradd --system --no-create-home --shell /usr/sbin/nologin "
               "zygo-rootless") != 0) {
      return "useradd zygo-rootless failed";
    }
    struct passwd* user = getpwnam(kUser);
    if (user == nullptr) return "no zygo-rootless user";
    uid_ = static_cast<int>(user->pw_uid);
    gid_ = static_cast<int>(user->pw_gid);
    // Still one thread here: unshare(CLONE_NEWNS) refuses a shared fs_struct.
    if (unshare(CLONE_NEWNS) != 0) return absl::StrCat("unshare(CLONE_NEWNS): ", strerror(errno));
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return absl::StrCat("make / private: ", strerror(errno));
    }
    dir_ = new std::string("/tmp/zygo-rootless-net-XXXXXX");
    if (mkdtemp(dir_->data()) == nullptr) return "mkdtemp";
    // A tmpfs of this namespace only, without nodev, for the two device nodes and for
    // copies of zygo and zygo-net the ordinary user can reach.
    if (mount("tmpfs", dir_->c_str(), "tmpfs", 0, "mode=0755") != 0) {
      return absl::StrCat("mount tmpfs: ", strerror(errno));
    }
    const dev_t tun = makedev(10, 200);
    if (mknod((*dir_ + "/tun-open").c_str(), S_IFCHR | 0666, tun) != 0 ||
        chmod((*dir_ + "/tun-open").c_str(), 0666) != 0 ||
        mknod((*dir_ + "/tun-closed").c_str(), S_IFCHR | 0600, tun) != 0) {
      return absl::StrCat("mknod: ", strerror(errno));
    }
    for (const char* binary : {"cli/zygo", "net/zygo-net"}) {
      std::string to = absl::StrCat(*dir_, "/", std::filesystem::path(binary).filename().string());
      std::error_code error;
      std::filesystem::copy_file(Runfile(binary), to, error);
      if (error || chmod(to.c_str(), 0755) != 0) return absl::StrCat("copy ", binary);
    }
    absl::StatusOr<std::unique_ptr<FakeInternet>> internet = FakeInternet::Start();
    if (!internet.ok()) return std::string(internet.status().message());
    internet_ = internet->release();
    // zygo (forked by the harness from this thread) runs on the "machine".
    if (setns(internet_->machine().fd(), CLONE_NEWNET) != 0) return "setns(machine)";
    return "";
  }

  static void TearDownTestSuite() {
    delete internet_;
    if (dir_ != nullptr) {
      umount2("/dev/net/tun", MNT_DETACH);
      umount2(dir_->c_str(), MNT_DETACH);
      rmdir(dir_->c_str());
    }
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, a test user)";
    if (access("/usr/bin/pasta", X_OK) != 0) GTEST_SKIP() << "needs pasta (passt package)";
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    ASSERT_NE(setup_error_, nullptr);
    ASSERT_EQ(*setup_error_, "");
  }

  // Puts the node of the given mode at /dev/net/tun (this namespace only).
  static void UseTun(bool open) {
    umount2("/dev/net/tun", MNT_DETACH);  // the previous test's node, if any
    std::string node = *dir_ + (open ? "/tun-open" : "/tun-closed");
    ASSERT_EQ(mount(node.c_str(), "/dev/net/tun", nullptr, MS_BIND, nullptr), 0) << strerror(errno);
  }

  // `zygo run --allow-unlimited FLAGS host ARGV` as the ordinary user.
  static RunResult RunRootless(std::vector<std::string> flags,
                               const std::vector<std::string>& argv) {
    flags.insert(flags.begin(), "--allow-unlimited");  // no delegated cgroup for this user
    RunOptions options;
    options.as_uid = uid_;
    options.as_gid = gid_;
    options.zygo_binary = *dir_ + "/zygo";
    options.want_outcome = false;
    options.env = {absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"), kMarker};
    return RunZygo(flags, "host", argv, options);
  }

  static std::map<std::string, std::string> Probe(const std::vector<std::string>& flags,
                                                  const std::vector<std::string>& targets) {
    std::vector<std::string> argv = {"/usr/bin/python3", "-c", kNetworkProbe};
    argv.insert(argv.end(), targets.begin(), targets.end());
    RunResult result = RunRootless(flags, argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    // Nothing is left: pasta carries the marker in its environment, as does zygo-net.
    EXPECT_THAT(ProcessesMatching(kMarker), IsEmpty());
    return ParseProbeVerdicts(result.out);
  }

  // The sandbox's root is the ordinary user on the host: "0 UID 1".
  static std::string RootlessMap() { return absl::StrCat("0 ", uid_, " 1"); }

  static inline FakeInternet* internet_ = nullptr;
  static inline std::string* dir_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
  static inline int uid_ = -1;
  static inline int gid_ = -1;
};

TEST_F(RootlessNetworkEscapeTest, RefusesWithOneLineWhenTheTunDeviceIsClosed) {
  // The control: with a usable tun device the same run starts.
  UseTun(true);
  RunResult ran = RunRootless({"--net", "full"}, {"/bin/echo", "ran"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
  UseTun(false);
  for (const char* mode : {"full", "egress"}) {
    std::vector<std::string> flags = {"--net", mode};
    if (std::string(mode) == "egress") flags = {"--net", "egress", "--allow", "allowed.test:8080"};
    RunResult refused = RunRootless(flags, {"/bin/echo", "ran"});
    EXPECT_EQ(refused.exit_code, 125) << mode;
    EXPECT_EQ(refused.out, "") << mode;
    EXPECT_EQ(LineCount(refused.err), 1) << refused.err;
    EXPECT_THAT(refused.err, HasSubstr("/dev/net/tun")) << mode;
  }
  EXPECT_THAT(ProcessesMatching(kMarker), IsEmpty());
}

TEST_F(RootlessNetworkEscapeTest, EgressReachesOnlyAllowlistedNamesAndPorts) {
  UseTun(true);
  internet_->Drain();
  const EgressBaseline before = TakeEgressBaseline(*internet_);
  std::vector<std::string> targets = EgressTargets();
  targets.insert(targets.begin(), "uidmap");
  std::map<std::string, std::string> v = Probe(EgressFlags(), targets);
  EXPECT_EQ(v["uidmap"], RootlessMap());  // it really ran as the ordinary user
  ExpectOnlyAllowlistedEgress(v, *internet_, before);
}

TEST_F(RootlessNetworkEscapeTest, FullReachesPublicAddressesButNotPrivateOnes) {
  UseTun(true);
  std::map<std::string, std::string> v = Probe(
      {"--net", "full"}, {"uidmap", "198.51.100.20:8080", "10.0.0.5:8080", "169.254.169.254:80"});
  EXPECT_EQ(v["uidmap"], RootlessMap());
  EXPECT_EQ(v["198.51.100.20:8080"], "connected");  // the control
  EXPECT_EQ(v["10.0.0.5:8080"], "timeout");
  EXPECT_EQ(v["169.254.169.254:80"], "timeout");
}

}  // namespace
}  // namespace zygo::testing
