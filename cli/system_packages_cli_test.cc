// System packages end to end (issue 19, section 2): a spec naming an OCI python image
// that is not yet in the store, a requirements file and a system package is `zygo up`-ed
// from scratch and answers; a second function on the same image and files reuses the
// venv and the system layer; a package the mirror lacks fails `zygo up` with apt's line
// and is remembered. Everything runs on a fake internet (testing/fake_internet.h) the test
// joins: the supervisor and a registry on the machine's loopback, and a Debian mirror
// under deb.debian.org serving two packages this test builds with dpkg-deb, which the
// opt-in test image python-apt (tools/images) names as its apt source.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testing/fake_internet.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"
#include "testing/test_dir.h"

extern char** environ;

namespace zygo::testing {
namespace {

// testing/python/make_tinypkg_wheel.py: DIR GREETING -> DIR/tinypkg-1.0-py3-none-any.whl.
std::string WheelScript() { return testing::Runfile("testing/python/make_tinypkg_wheel.py"); }

namespace fs = std::filesystem;

// A Debian repository at $1/debian: zygo-test-hello (a file in /usr/share and one in
// /lib, which a merged-/usr image has as a link) depending on zygo-test-dep, with a
// Packages index and an unsigned Release, as the image's [trusted=yes] source takes it.
constexpr char kMirrorScript[] = R"sh(set -euo pipefail
repo=$1/debian
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$repo/pool/main" "$repo/dists/bookworm/main/binary-$arch"
deb() {  # NAME DEPENDS [PATH CONTENT]...
  local name=$1 depends=$2 root=$work/$1
  shift 2
  mkdir -p "$root/DEBIAN"
  {
    printf 'Package: %s\nVersion: 1.0\nArchitecture: all\n' "$name"
    printf 'Maintainer: Zygo tests <tests@zygo.test>\n'
    [[ -z $depends ]] || printf 'Depends: %s\n' "$depends"
    printf 'Description: a package of zygo'"'"'s system package tests\n'
  } >"$root/DEBIAN/control"
  while (($#)); do
    mkdir -p "$root$(dirname "$1")"
    printf '%s\n' "$2" >"$root$1"
    shift 2
  done
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$repo/pool/main/${name}_1.0_all.deb" >/dev/null
}
deb zygo-test-dep '' /usr/share/zygo-test/dep.txt 'from zygo-test-dep'
deb zygo-test-hello zygo-test-dep /usr/share/zygo-test/hello.txt 'hello from zygo-test-hello' \
  /lib/zygo-test/lib.txt 'under /lib'
packages=$repo/dists/bookworm/main/binary-$arch/Packages
for f in "$repo"/pool/main/*.deb; do
  dpkg-deb --field "$f"
  printf 'Filename: pool/main/%s\nSize: %s\nSHA256: %s\n\n' "$(basename "$f")" \
    "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)"
done >"$packages"
{
  printf 'Suite: bookworm\nCodename: bookworm\nDate: Tue, 14 Nov 2023 22:13:20 UTC\n'
  printf 'Architectures: %s\nComponents: main\nSHA256:\n' "$arch"
  printf ' %s %s main/binary-%s/Packages\n' "$(sha256sum "$packages" | cut -d' ' -f1)" \
    "$(stat -c %s "$packages")" "$arch"
} >"$repo/dists/bookworm/Release"
)sh";

// Reads the packages' files (and the venv's package) from inside the function.
constexpr char kHandler[] = R"(import sys

def read(path):
    try:
        return open(path).read().strip()
    except OSError as e:
        return type(e).__name__

def main(event):
    try:
        import tinypkg
        greeting = tinypkg.GREETING
    except ImportError:
        greeting = 'no tinypkg'
    return [greeting, read('/usr/share/zygo-test/hello.txt'), read('/usr/share/zygo-test/dep.txt'),
            read('/lib/zygo-test/lib.txt'), sys.prefix]
)";

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().string());
  return names;
}

ino_t TestFileInode(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class SystemPackagesCli : public ::testing::Test {
 protected:
  // The image first, while this thread still reaches the real Debian mirror; then the
  // thread joins the fake internet's machine for the whole suite.
  static void SetUpTestSuite() {
    if (geteuid() != 0 || access("/usr/bin/pasta", X_OK) != 0) return;
    absl::StatusOr<TestImage> image = BuildTestImage("python-apt");
    if (!image.ok()) {
      skip_ = new std::string(
          absl::StrCat(image.status().message(), " (needs root and the Debian mirror)"));
      return;
    }
    image_ = new TestImage(*image);
    absl::StatusOr<std::unique_ptr<MachineSession>> session = MachineSession::Start();
    if (!session.ok()) {
      setup_error_ = new std::string(session.status().ToString());
      return;
    }
    session_ = session->release();
  }

  static void TearDownTestSuite() {
    delete session_;
    session_ = nullptr;
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, nftables)";
    if (access("/usr/bin/pasta", X_OK) != 0) GTEST_SKIP() << "needs pasta (passt package)";
    if (skip_ != nullptr) GTEST_SKIP() << *skip_;
    ASSERT_EQ(setup_error_, nullptr) << *setup_error_;
    ASSERT_NE(session_, nullptr);
    scratch_ = FreshTestDir();
    store_ = scratch_ + "/store";
    code_ = scratch_ + "/code";
    fs::create_directories(code_ + "/wheels");
    ASSERT_EQ(RunOnHost({"/bin/bash", "-c", kMirrorScript, "bash", scratch_ + "/mirror"}).exit_code,
              0);
    session_->internet().mirror().SetRoot(scratch_ + "/mirror");
    ASSERT_EQ(
        RunOnHost({"/usr/bin/python3", WheelScript(), code_ + "/wheels", "hello from tinypkg"})
            .exit_code,
        0);
    std::ofstream(code_ + "/requirements.txt") << "tinypkg==1.0\n";
    std::ofstream(code_ + "/handler.py") << kHandler;
    StartRegistry();
    SupervisorProcess::Options options;
    for (char** entry = environ; *entry != nullptr; ++entry) options.env.push_back(*entry);
    options.env.push_back("ZYGO_HOME=" + store_);
    options.env.push_back(absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53"));
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> supervisor =
        SupervisorProcess::Start(options);
    ASSERT_TRUE(supervisor.ok()) << supervisor.status();
    supervisor_ = *std::move(supervisor);
  }

  void TearDown() override {
    supervisor_.reset();
    if (!registry_dir_.empty()) RunOnHost({Runfile("testing/registry/stop"), registry_dir_});
    if (session_ != nullptr) session_->internet().mirror().SetRoot("");
  }

  // A registry on the machine's loopback holding the image, which the store lacks.
  void StartRegistry() {
    RunResult started = RunOnHost(
        {Runfile("testing/registry/serve"), "anonymous", "--watch", absl::StrCat(getpid())});
    ASSERT_EQ(started.exit_code, 0) << started.err;
    std::smatch match;
    if (std::regex_search(started.out, match, std::regex("DIR=([^ \\n]+)")))
      registry_dir_ = match[1];
    ASSERT_TRUE(std::regex_search(started.out, match, std::regex("REGISTRY=([^ \\n]+)")));
    reference_ = absl::StrCat(match[1].str(), "/zygo/python-apt:1");
    RunResult pushed = RunOnHost({Runfile("testing/registry/push"), image_->layout, reference_});
    ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  }

  RunResult Zygo(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZygoPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.env = {"ZYGO_HOME=" + store_};
    options.want_outcome = false;
    options.timeout_seconds = 600;
    return RunOnHost(argv, options);
  }

  // `zygo up` of a python function on the registry's image with the requirements and
  // `system` (a TOML array, or "" for none).
  RunResult Up(const std::string& name, const std::string& system) {
    const std::string spec = absl::StrCat(code_, "/", name, ".toml");
    std::ofstream(spec) << "name = \"" << name << "\"\nimage = \"" << reference_
                        << "\"\nentry = \"handler.py:main\"\nrequirements = \"requirements.txt\"\n"
                        << "find_links = \"wheels\"\n"
                        << (system.empty() ? "" : absl::StrCat("system = ", system, "\n"))
                        << "[limits]\ntimeout = \"20s\"\n";
    return Zygo({"up", "--socket", supervisor_->http_socket(), spec});
  }

  RunResult Exec(const std::string& name) {
    return Zygo({"exec", "--socket", supervisor_->http_socket(), name});
  }

  static inline MachineSession* session_ = nullptr;
  static inline TestImage* image_ = nullptr;
  static inline std::string* skip_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
  std::string scratch_, store_, code_, reference_, registry_dir_;
  std::unique_ptr<SupervisorProcess> supervisor_;
};

TEST_F(SystemPackagesCli, UpFromScratchInstallsThePackagesOnceAndRemembersAFailure) {
  FakeHttpFiles& mirror = session_->internet().mirror();
  EXPECT_FALSE(absl::StrContains(Zygo({"images"}).out, "python-apt")) << "not in the store yet";
  RunResult first = Up("first", "[\"zygo-test-hello\"]");
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  RunResult answer = Exec("first");
  EXPECT_EQ(answer.exit_code, 0) << answer.err;
  EXPECT_EQ(answer.out,
            "[\"hello from tinypkg\",\"hello from zygo-test-hello\",\"from zygo-test-dep\","
            "\"under /lib\",\"/venv\"]\n");
  // The packages came from the image's mirror, through the build's network.
  const std::vector<std::string> fetched = mirror.Requests();
  EXPECT_TRUE(absl::StrContains(absl::StrJoin(fetched, "\n"),
                                "GET /debian/pool/main/zygo-test-hello_1.0_all.deb 200"))
      << absl::StrJoin(fetched, "\n");
  ASSERT_EQ(Entries(store_ + "/system/sha256").size(), 1u);
  ASSERT_EQ(Entries(store_ + "/venvs/sha256").size(), 1u);
  const std::string layer = Entries(store_ + "/system/sha256")[0];
  const std::string venv = Entries(store_ + "/venvs/sha256")[0];
  const ino_t layer_inode = TestFileInode(layer + "/root"), venv_inode = TestFileInode(venv);
  // Control: the image itself has none of the packages' files; a function without
  // `system` on it sees none.
  RunResult plain_up = Up("plain", "");
  ASSERT_EQ(plain_up.exit_code, 0) << plain_up.err;
  EXPECT_EQ(Exec("plain").out,
            "[\"hello from tinypkg\",\"FileNotFoundError\",\"FileNotFoundError\","
            "\"FileNotFoundError\",\"/venv\"]\n");
  ASSERT_EQ(Entries(store_ + "/venvs/sha256").size(), 2u) << "a venv of the image's own root";

  // A second function on the same image, file and packages: nothing fetched or built.
  RunResult second = Up("second", "[\"zygo-test-hello\"]");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Exec("second").out, answer.out);
  EXPECT_EQ(mirror.Requests().size(), fetched.size());
  ASSERT_EQ(Entries(store_ + "/system/sha256").size(), 1u);
  EXPECT_EQ(TestFileInode(layer + "/root"), layer_inode);
  EXPECT_EQ(TestFileInode(venv), venv_inode);
  EXPECT_EQ(Entries(store_ + "/venvs/sha256").size(), 2u);

  // A package the mirror lacks: apt's line at `zygo up`, exit 125, and remembered.
  RunResult bad = Up("bad", "[\"zygo-test-nosuch\"]");
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_EQ(LineCount(bad.err), 1) << bad.err;
  EXPECT_TRUE(absl::StrContains(bad.err,
                                "system packages: apt-get install failed (exit 100): "
                                "E: Unable to locate package zygo-test-nosuch"))
      << bad.err;
  const size_t asked = mirror.Requests().size();
  EXPECT_GT(asked, fetched.size()) << "the failed build asked the mirror";
  RunResult again = Exec("bad");
  EXPECT_EQ(again.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(again.err, "remembered")) << again.err;
  EXPECT_EQ(mirror.Requests().size(), asked) << "no rebuild per request";
  EXPECT_EQ(Entries(store_ + "/system/sha256").size(), 1u);
  EXPECT_TRUE(Entries(store_ + "/tmp").empty());
}

}  // namespace
}  // namespace zygo::testing
