// System layers with a fake SandboxRunner that plays apt-get and dpkg-deb: the key, the
// jobs (their network allowlist, mounts and arguments), the derived root, reuse, one-line
// failures that leave nothing, prune. No privileges, no sandbox (the real builds are in
// cli:system_packages_cli_test and security_tests:system_build_escape_test).
#include "images/system_layer.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "testing/test_dir.h"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
using zygo::testing::ReadTestFile;
using zygo::testing::TestFileInode;
using zygo::testing::WriteTestFile;

class SystemLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = zygo::testing::FreshTestDir();
    absl::StatusOr<Store> store = Store::Open(dir_ + "/store");
    ASSERT_TRUE(store.ok()) << store.status();
    store_.emplace(std::move(*store));
    image_.reference = "docker.io/library/py:test";
    image_.manifest_digest = "sha256:" + std::string(64, 'a');
    image_.rootfs = dir_ + "/rootfs";
    image_.config.env = {"PATH=/usr/bin:/bin"};
    fs::create_directories(image_.rootfs + "/tmp");
    WriteTestFile(image_.rootfs + "/usr/bin/apt-get", "");
    WriteTestFile(image_.rootfs + "/usr/bin/dpkg-deb", "");
    WriteTestFile(image_.rootfs + "/usr/bin/python3", "python");
    WriteTestFile(image_.rootfs + "/etc/apt/sources.list",
                  "deb http://deb.debian.org/debian bookworm main\n");
    WriteTestFile(image_.rootfs + "/etc/apt/sources.list.d/debian.sources",
                  "Types: deb\nURIs: https://security.example/debian-security\nSuites: x\n");
    request_.packages = {"zygo-test-hello"};
    request_.base_rootfs = image_.rootfs;
    request_.base_key = image_.manifest_digest;
  }

  // Plays apt-get (install fetches one .deb per package, and a dependency) and dpkg-deb
  // (each .deb becomes /usr/share/zygo-test/<deb>.txt); `fail_step` exits 100 with `log`.
  SandboxRunner Fake(const std::string& fail_step = "", const std::string& log = "") {
    return [this, fail_step, log](const SandboxJob& job) -> absl::StatusOr<int> {
      jobs_.push_back(job);
      if (job.mounts.size() != 1 || job.mounts[0].sandbox != "/tmp" || job.mounts[0].read_only) {
        return absl::InternalError("want one rw mount at /tmp");
      }
      const std::string tmp = job.mounts[0].host;
      if (job.output.empty() || absl::StartsWith(job.output, tmp + "/")) {
        return absl::InternalError("the log must be outside the job's writable mount");
      }
      const std::string step = job.argv[0] == "apt-get" ? job.argv.back() : job.argv[0];
      WriteTestFile(job.output, step == fail_step ? log : "fine\n");
      if (step == fail_step) return 100;
      if (job.argv[0] == "apt-get" && absl::StrContains(absl::StrJoin(job.argv, " "), "install")) {
        for (const std::string& deb :
             {std::string("zygo-test-dep_1.0_all.deb"), job.argv.back() + "_1.0_all.deb"}) {
          WriteTestFile(absl::StrCat(tmp, "/archives/", deb), "!<arch>\n");
        }
        WriteTestFile(tmp + "/archives/partial/half.deb", "");  // never unpacked
      }
      if (job.argv[0] == "dpkg-deb") {
        const std::string deb = fs::path(job.argv[2]).filename().string();
        WriteTestFile(absl::StrCat(tmp, "/out/usr/share/zygo-test/", deb, ".txt"), deb);
      }
      return 0;
    };
  }

  std::string dir_;
  std::optional<Store> store_;
  RunnableImage image_;
  SystemRequest request_;
  std::vector<SandboxJob> jobs_;
};

TEST_F(SystemLayerTest, KeyCoversTheBaseAndThePackages) {
  const std::string key = SystemLayerKey(image_.manifest_digest, {"curl", "git"});
  EXPECT_EQ(key, SystemLayerKey(image_.manifest_digest, {"curl", "git"}));
  EXPECT_NE(key, SystemLayerKey(image_.manifest_digest, {"curl"}));
  EXPECT_NE(key, SystemLayerKey(image_.manifest_digest, {"curl", "git", "zip"}));
  EXPECT_NE(key, SystemLayerKey("sha256:" + std::string(64, 'b'), {"curl", "git"}));
  // No list is a prefix of another's text.
  EXPECT_NE(SystemLayerKey(image_.manifest_digest, {"ab"}),
            SystemLayerKey(image_.manifest_digest, {"a", "b"}));
  EXPECT_EQ(key.substr(0, 7), "sha256:");
}

TEST_F(SystemLayerTest, BuildsWithTheImagesAptOnTheImagesMirrorsOnly) {
  absl::StatusOr<SystemLayer> layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_TRUE(layer->built);
  EXPECT_EQ(layer->debs, 2);
  EXPECT_EQ(layer->rootfs,
            absl::StrCat(store_->root(), "/system/sha256/", DigestHex(layer->key), "/root"));
  // Two apt-get jobs with the network of the image's sources, one dpkg-deb job per .deb
  // without any; every job in the base root with the image's Env.
  ASSERT_EQ(jobs_.size(), 4u);
  const std::vector<std::string> mirrors = {"deb.debian.org:80", "security.example:443"};
  EXPECT_EQ(jobs_[0].argv.front(), "apt-get");
  EXPECT_EQ(jobs_[0].argv.back(), "update");
  EXPECT_EQ(jobs_[0].allow, mirrors);
  const std::string install = absl::StrJoin(jobs_[1].argv, " ");
  EXPECT_TRUE(
      absl::EndsWith(install, "install -y --download-only --no-install-recommends zygo-test-hello"))
      << install;
  EXPECT_TRUE(absl::StrContains(install, "-o APT::Sandbox::User=root")) << install;
  EXPECT_TRUE(absl::StrContains(install, "-o Dir::Etc::SourceList=/etc/apt/sources.list"));
  EXPECT_EQ(jobs_[1].allow, mirrors);
  EXPECT_EQ(absl::StrJoin(jobs_[2].argv, " "),
            "dpkg-deb -x /tmp/archives/zygo-test-dep_1.0_all.deb /tmp/out");
  EXPECT_EQ(absl::StrJoin(jobs_[3].argv, " "),
            "dpkg-deb -x /tmp/archives/zygo-test-hello_1.0_all.deb /tmp/out");
  for (const SandboxJob& job : jobs_) {
    EXPECT_EQ(job.rootfs, image_.rootfs);
    EXPECT_EQ(job.image_env, image_.config.env);
  }
  EXPECT_TRUE(jobs_[2].allow.empty());
  EXPECT_TRUE(jobs_[3].allow.empty());
  // The root: the image's files as the same inodes, the packages' files over them.
  EXPECT_EQ(TestFileInode(layer->rootfs + "/usr/bin/python3"),
            TestFileInode(image_.rootfs + "/usr/bin/python3"));
  EXPECT_EQ(ReadTestFile(layer->rootfs + "/usr/share/zygo-test/zygo-test-hello_1.0_all.deb.txt"),
            "zygo-test-hello_1.0_all.deb");
  EXPECT_FALSE(fs::exists(image_.rootfs + "/usr/share/zygo-test")) << "the image is untouched";
  const std::string entry = fs::path(layer->rootfs).parent_path().string();
  EXPECT_EQ(ReadTestFile(entry + "/zygo-image"), image_.manifest_digest + "\n");
  EXPECT_EQ(ReadTestFile(entry + "/packages"), "zygo-test-hello\n");
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
  // Reused: no job, the same root.
  jobs_.clear();
  absl::StatusOr<SystemLayer> again = EnsureSystemLayer(*store_, image_, request_, Fake());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->built);
  EXPECT_EQ(again->rootfs, layer->rootfs);
  EXPECT_TRUE(jobs_.empty());
}

TEST_F(SystemLayerTest, AptsErrorIsTheOneLineAndNothingStays) {
  absl::StatusOr<SystemLayer> layer = EnsureSystemLayer(
      *store_, image_, request_,
      Fake("zygo-test-hello",
           "Reading package lists...\nE: Unable to locate package zygo-test-hello\nlater noise\n"));
  ASSERT_FALSE(layer.ok());
  EXPECT_EQ(layer.status().message(),
            "system packages: apt-get install failed (exit 100): E: Unable to locate package "
            "zygo-test-hello");
  EXPECT_TRUE(fs::is_empty(store_->root() + "/system/sha256"));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));

  layer = EnsureSystemLayer(*store_, image_, request_, [](const SandboxJob&) {
    return absl::StatusOr<int>(absl::DeadlineExceededError("timed out after 600 s"));
  });
  EXPECT_EQ(layer.status().message(), "system packages: apt-get update: timed out after 600 s");
  EXPECT_TRUE(absl::IsDeadlineExceeded(layer.status()));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
}

// The jobs write in the build's scratch directory; one that swaps the unpacked tree for
// a link to a host directory makes the build fail, and that directory's files stay.
TEST_F(SystemLayerTest, AJobsLinkOutOfTheScratchDirectoryIsNotFollowed) {
  const std::string host_dir = dir_ + "/host-dir";
  WriteTestFile(host_dir + "/usr/share/secret.txt", "host\n");
  SandboxRunner fake = Fake();
  absl::StatusOr<SystemLayer> layer =
      EnsureSystemLayer(*store_, image_, request_, [&](const SandboxJob& job) {
        absl::StatusOr<int> exit_code = fake(job);
        if (job.argv[0] == "dpkg-deb") {
          fs::remove_all(job.mounts[0].host + "/out");
          fs::create_directory_symlink(host_dir, job.mounts[0].host + "/out");
        }
        return exit_code;
      });
  ASSERT_FALSE(layer.ok());
  EXPECT_TRUE(absl::StartsWith(layer.status().message(), "system packages: open("))
      << layer.status();
  EXPECT_TRUE(absl::StrContains(layer.status().message(), "O_NOFOLLOW")) << layer.status();
  EXPECT_EQ(ReadTestFile(host_dir + "/usr/share/secret.txt"), "host\n");
  EXPECT_TRUE(fs::is_empty(store_->root() + "/system/sha256"));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
}

TEST_F(SystemLayerTest, ImagesThatCannotDoItAreRefusedBeforeAnyJob) {
  fs::remove(image_.rootfs + "/usr/bin/dpkg-deb");
  absl::StatusOr<SystemLayer> layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  EXPECT_EQ(layer.status().message(),
            "system packages: the image has no dpkg-deb (zygo installs them with the image's own "
            "apt)");
  WriteTestFile(image_.rootfs + "/usr/bin/dpkg-deb", "");

  // A PATH directory that is an absolute link: looked up inside the root, where it leads
  // nowhere, and never on the host, where it has an apt-get.
  fs::remove(image_.rootfs + "/usr/bin/apt-get");
  WriteTestFile(dir_ + "/host-bin/apt-get", "");
  fs::create_directory_symlink(dir_ + "/host-bin", image_.rootfs + "/bin");
  layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  EXPECT_EQ(layer.status().message(),
            "system packages: the image has no apt-get (zygo installs them with the image's own "
            "apt)");
  WriteTestFile(image_.rootfs + "/usr/bin/apt-get", "");

  WriteTestFile(image_.rootfs + "/etc/apt/sources.list.d/lan.list",
                "deb http://10.0.0.5/debian bookworm main\n");
  layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  EXPECT_EQ(layer.status().message(),
            "system packages: /etc/apt/sources.list.d/lan.list:1: http://10.0.0.5/debian: an IP "
            "address (the build's network allows names only)");

  fs::remove_all(image_.rootfs + "/etc/apt");
  layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  EXPECT_EQ(layer.status().message(),
            "system packages: the image has no apt sources (/etc/apt/sources.list, "
            "/etc/apt/sources.list.d)");
  EXPECT_TRUE(jobs_.empty());
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
}

// The build's network binds its own resolv.conf over the root's, which image layers
// often lack: the store's copy of the root gets an empty one, never through a link.
TEST_F(SystemLayerTest, TheBaseRootGetsAResolvConfButNeverThroughALink) {
  ASSERT_FALSE(fs::exists(image_.rootfs + "/etc/resolv.conf"));
  ASSERT_TRUE(EnsureSystemLayer(*store_, image_, request_, Fake()).ok());
  EXPECT_TRUE(fs::is_regular_file(image_.rootfs + "/etc/resolv.conf"));
  EXPECT_EQ(ReadTestFile(image_.rootfs + "/etc/resolv.conf"), "");

  // An image whose /etc is an absolute link: its sources are read inside the root, and
  // the same path on the host is never written.
  const std::string outside = dir_ + "/outside";
  fs::create_directories(outside);
  fs::rename(image_.rootfs + "/etc", image_.rootfs + "/real-etc");
  fs::create_directories(fs::path(image_.rootfs + outside).parent_path());
  fs::create_directory_symlink("/real-etc", image_.rootfs + outside);
  fs::create_directory_symlink(outside, image_.rootfs + "/etc");
  fs::remove(image_.rootfs + "/real-etc/resolv.conf");
  request_.packages = {"other"};
  absl::StatusOr<SystemLayer> layer = EnsureSystemLayer(*store_, image_, request_, Fake());
  EXPECT_FALSE(layer.ok());
  EXPECT_TRUE(absl::StartsWith(layer.status().message(), "system packages: open("))
      << layer.status();
  EXPECT_TRUE(absl::StrContains(layer.status().message(), "/etc): ")) << layer.status();
  EXPECT_TRUE(fs::is_empty(outside)) << "written through the image's link";
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
}

TEST_F(SystemLayerTest, PruneKeepsTheLayersOfRecordedImages) {
  ASSERT_TRUE(EnsureSystemLayer(*store_, image_, request_, Fake()).ok());
  RunnableImage other = image_;
  other.manifest_digest = "sha256:" + std::string(64, 'e');
  request_.base_key = other.manifest_digest;
  absl::StatusOr<SystemLayer> gone = EnsureSystemLayer(*store_, other, request_, Fake());
  ASSERT_TRUE(gone.ok()) << gone.status();
  absl::StatusOr<int64_t> freed = PruneSystemLayers(*store_, {image_.manifest_digest});
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_GT(*freed, 0);
  EXPECT_FALSE(fs::exists(gone->rootfs));
  int left = 0;
  for ([[maybe_unused]] const auto& entry :
       fs::directory_iterator(store_->root() + "/system/sha256")) {
    ++left;
  }
  EXPECT_EQ(left, 1);
}

}  // namespace
}  // namespace zygo::images
