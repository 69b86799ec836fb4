// Network escapes from the builds of an OCI image's dependencies (issue 19, section 2): a
// system-package build reaches only the hosts of the image's own apt sources, its unpack
// step nothing, and a requirements (venv) build nothing at all. The builds run the
// image's own tools, so a hostile image controls them: this one's apt-get, dpkg-deb and
// pip are the network probe (security_tests/network_probe.h), each leaving its verdicts
// in the layer or venv the build makes, which a run then reads. Its apt sources name
// allowed.test:8080 and rebind.test:8080, the allowlist the one-shot egress attempts are
// written for (security_tests/egress_attempts.h). zygo runs on the fake internet's
// machine; no packet leaves the test's namespaces.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security_tests/egress_attempts.h"
#include "security_tests/machine_suite.h"
#include "security_tests/network_probe.h"
#include "testing/fake_internet.h"
#include "testing/harness.h"
#include "testing/test_dir.h"

namespace zygo::testing {
namespace {

using ::testing::IsEmpty;
using zygo::testing::WriteTestFile;

constexpr char kMarker[] = "ZYGO_BUILD_NET_TEST_MARKER=5e1ec7ed";

// The image's apt-get and dpkg-deb (a link to it): runs the probe with the network its
// build step has, writes the verdicts where the build takes its output from, and for
// `install` leaves a .deb so that the unpack step runs too.
constexpr char kAptProbe[] = R"(#!/usr/bin/python3
import json, os, subprocess, sys
tool = os.path.basename(sys.argv[0])
step = ('install' if 'install' in sys.argv else 'update') if tool == 'apt-get' else 'unpack'
targets = json.load(open('/usr/lib/zygo-probe/targets.json'))
seen = subprocess.run([sys.executable, '/usr/lib/zygo-probe/probe.py'] + targets,
                      capture_output=True, text=True).stdout
os.makedirs('/tmp/out/zygo-probe', exist_ok=True)
with open('/tmp/out/zygo-probe/' + step, 'w') as f:
    f.write(seen)
if step == 'install':
    with open('/tmp/archives/zygo-probe_1.0_all.deb', 'w') as f:
        f.write('not a deb\n')
)";

// The image's pip (`python3 -m pip`): the same, into the venv being built.
constexpr char kPipProbe[] = R"(import json, os, subprocess, sys
if '--version' in sys.argv:
    print('pip 23.0 (a probe)')
    sys.exit(0)
targets = json.load(open('/usr/lib/zygo-probe/targets.json'))
seen = subprocess.run([sys.executable, '/usr/lib/zygo-probe/probe.py'] + targets,
                      capture_output=True, text=True).stdout
os.makedirs('/venv/zygo-probe', exist_ok=True)
with open('/venv/zygo-probe/pip', 'w') as f:
    f.write(seen)
)";

// python-host's layer plus a layer with the probes and the apt sources. Args: the
// tools/images dir, python-host's layout, the output layout, then the files' contents:
// probe.py, targets.json, apt-get, pip's __main__.py.
constexpr char kHostileImageScript[] = R"sh(set -euo pipefail
IMAGES_DIR=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source "$IMAGES_DIR/lib.sh"
layer=$(/usr/bin/python3 -c '
import json, sys
base = sys.argv[1]
def blob(digest):
    return "%s/blobs/%s" % (base, digest.replace(":", "/"))
index = json.load(open(base + "/index.json"))
manifest = json.load(open(blob(index["manifests"][0]["digest"])))
print(blob(manifest["layers"][0]["digest"]))' "$2")
gzip -dc "$layer" >"$WORK/base.tar"
root=$WORK/probes
put_file "$root/etc/apt/sources.list" 0644 'deb http://allowed.test:8080/debian bookworm main
deb [trusted=yes] http://rebind.test:8080/debian bookworm main
'
put_file "$root/usr/lib/zygo-probe/probe.py" 0644 "$4"
put_file "$root/usr/lib/zygo-probe/targets.json" 0644 "$5"
put_file "$root/usr/bin/apt-get" 0755 "$6"
ln -s apt-get "$root/usr/bin/dpkg-deb"
put_file "$root/usr/lib/python3/dist-packages/pip/__init__.py" 0644 ''
put_file "$root/usr/lib/python3/dist-packages/pip/__main__.py" 0644 "$7"
make_layer_tar "$root" "$WORK/probes.tar"
oci image "$3" --ref latest --layer "$WORK/base.tar" --layer "$WORK/probes.tar" \
  --config '{"Env":["PATH=/usr/bin:/bin"],"Cmd":["python3"]}' >/dev/null
)sh";

class SystemBuildEscapeTest : public MachineSuite {
 protected:
  void SetUp() override {
    MachineSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    scratch_ = FreshTestDir();
    store_ = scratch_ + "/store";
    for (const std::string& cgroup : LeftoverCgroups()) cgroups_before_.insert(cgroup);
    absl::StatusOr<TestImage> base = BuildTestImage("python-host");
    if (!base.ok()) GTEST_SKIP() << "no python-host image: " << base.status().message();
    RunResult made =
        RunOnHost({"/bin/bash", "-c", kHostileImageScript, "bash", Runfile("tools/images"),
                   base->layout, scratch_ + "/hostile", kNetworkProbe,
                   nlohmann::json(EgressTargets()).dump(), kAptProbe, kPipProbe});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    RunResult loaded = Zygo({"load", scratch_ + "/hostile", "hostile:test"});
    ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  }

  // zygo on the machine, its DNS upstream the fake internet's; a marker in its
  // environment (and so in pasta's) finds what it leaves running.
  RunResult Zygo(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZygoPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.want_outcome = false;
    options.env = {"ZYGO_HOME=" + store_, absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"),
                   "ZYGO_BYTECODE=0", kMarker};
    return RunOnHost(argv, options);
  }

  // `zygo FLAGS hostile:test` printing a file of the sandbox's root (python-host has no
  // cat): the probe's verdicts that a build left there.
  RunResult Show(std::vector<std::string> flags, const std::string& path) {
    flags.insert(flags.end(),
                 {"hostile:test", "python3", "-c",
                  absl::StrCat("import sys; sys.stdout.write(open('", path, "').read())")});
    return Zygo(flags);
  }

  // Nothing of this test's zygo runs is left: no process (pasta, zygo-net), no cgroup
  // that was not already left over before the test (another test on this host may leak
  // one meanwhile; it is not ours to judge here), nothing in the store's tmp/.
  void ExpectNothingLeft() {
    EXPECT_THAT(ProcessesMatching(kMarker), IsEmpty());
    std::vector<std::string> new_cgroups;
    for (const std::string& cgroup : LeftoverCgroups()) {
      if (!cgroups_before_.count(cgroup)) new_cgroups.push_back(cgroup);
    }
    EXPECT_THAT(new_cgroups, IsEmpty());
    EXPECT_TRUE(std::filesystem::is_empty(store_ + "/tmp"));
  }

  // Verdicts of a step that must reach nothing: no connection, no datagram, no answer.
  static void ExpectNoNetwork(std::map<std::string, std::string>& verdicts) {
    ASSERT_EQ(verdicts.size(), EgressTargets().size()) << "the probe ran every attempt";
    for (const auto& [target, verdict] : verdicts) {
      EXPECT_NE(verdict, "connected") << target;
      EXPECT_NE(verdict, "sent") << target;
      EXPECT_NE(verdict, "answered") << target;
    }
  }

  std::string scratch_, store_;
  std::set<std::string> cgroups_before_;
};

TEST_F(SystemBuildEscapeTest, PackageBuildReachesOnlyTheImagesMirrorsAndUnpacksOffline) {
  internet_->Drain();
  const EgressBaseline before = TakeEgressBaseline(*internet_);
  const std::vector<std::string> system = {"run", "--system", "zygo-probe"};
  RunResult update = Show({"-v", "run", "--system", "zygo-probe"}, "/zygo-probe/update");
  ASSERT_EQ(update.exit_code, 0) << update.err;
  EXPECT_TRUE(absl::StrContains(update.err, "zygo: system layer sha256:")) << update.err;
  EXPECT_TRUE(absl::StrContains(update.err, " built in ")) << update.err;
  // apt-get update, then install: the network of the image's two sources and nothing
  // else. The controls are among the checks: allowed.test:8080 resolves through the
  // upstream and takes a connection and a datagram.
  {
    SCOPED_TRACE("apt-get update");
    std::map<std::string, std::string> verdicts = ParseProbeVerdicts(update.out);
    ExpectOnlyAllowlistedEgress(verdicts, *internet_, before);
  }
  RunResult install = Show(system, "/zygo-probe/install");
  ASSERT_EQ(install.exit_code, 0) << install.err;
  {
    SCOPED_TRACE("apt-get install");
    std::map<std::string, std::string> verdicts = ParseProbeVerdicts(install.out);
    ExpectOnlyAllowlistedEgress(verdicts, *internet_, before);
  }
  // dpkg-deb -x: no network at all, not even the mirrors.
  RunResult unpack = Show(system, "/zygo-probe/unpack");
  ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
  {
    SCOPED_TRACE("dpkg-deb -x");
    std::map<std::string, std::string> verdicts = ParseProbeVerdicts(unpack.out);
    ExpectNoNetwork(verdicts);
  }
  ExpectNothingLeft();
}

// The venv build runs the image's own pip with no network (pip has only --find-links
// wheels, or a run's --allow-host-net): here over the system layer, whose build in the
// run before is the control that the same probe in the same image gets through.
TEST_F(SystemBuildEscapeTest, RequirementsBuildReachesNothing) {
  internet_->Drain();
  RunResult control = Show({"run", "--system", "zygo-probe"}, "/zygo-probe/update");
  ASSERT_EQ(control.exit_code, 0) << control.err;
  std::map<std::string, std::string> seen = ParseProbeVerdicts(control.out);
  ASSERT_EQ(seen["allowed.test:8080"], "connected");
  ASSERT_EQ(seen["udp@allowed.test:8080"], "sent");
  ASSERT_TRUE(internet_->UdpArrived(kAllowedAddress));

  internet_->Drain();
  const int asked = internet_->dns().QueriesFor("allowed.test");
  WriteTestFile(scratch_ + "/requirements.txt", "anything==1\n");
  RunResult venv = Show(
      {"-v", "run", "--system", "zygo-probe", "--requirements", scratch_ + "/requirements.txt"},
      "/venv/zygo-probe/pip");
  ASSERT_EQ(venv.exit_code, 0) << venv.err;
  EXPECT_TRUE(absl::StrContains(venv.err, "zygo: system layer sha256:")) << venv.err;
  EXPECT_TRUE(absl::StrContains(venv.err, " reused")) << "no second package build: " << venv.err;
  std::map<std::string, std::string> verdicts = ParseProbeVerdicts(venv.out);
  ExpectNoNetwork(verdicts);
  EXPECT_EQ(internet_->dns().QueriesFor("allowed.test"), asked) << "the venv build asked DNS";
  for (const char* address : {kAllowedAddress, kOtherAddress, kLanAddress, kMetadataAddress}) {
    EXPECT_FALSE(internet_->UdpArrived(address)) << address;
  }
  ExpectNothingLeft();
}

}  // namespace
}  // namespace zygo::testing
