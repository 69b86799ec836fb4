// Cached venvs with a fake SandboxRunner that plays python -m venv and pip: keys, staging,
// the build's mounts and arguments, reuse, failures as one line. No privileges, no
// sandbox (the real builds are in venv_run_test).
#include "images/venv_cache.h"

#include <stdlib.h>
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

using zygo::testing::ReadTestFile;

namespace fs = std::filesystem;

const JobMount* MountAt(const SandboxJob& job, const std::string& sandbox) {
  for (const JobMount& mount : job.mounts) {
    if (mount.sandbox == sandbox) return &mount;
  }
  return nullptr;
}

class VenvCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = zygo::testing::FreshTestDir();
    absl::StatusOr<Store> store = Store::Open(dir_ + "/store");
    ASSERT_TRUE(store.ok()) << store.status();
    store_.emplace(std::move(*store));
    image_.reference = "docker.io/library/py:test";
    image_.manifest_digest = "sha256:" + std::string(64, 'a');
    image_.rootfs = dir_ + "/rootfs";
    image_.config.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    fs::create_directories(image_.rootfs + "/tmp");
    request_.requirements = dir_ + "/requirements.txt";
    testing::WriteTestFile(request_.requirements, "tinypkg==1.0\n");
  }

  // Plays the build script: a venv with bin/python, the log and pip's temp directory.
  SandboxRunner Fake(int exit_code = 0, const std::string& log = "") {
    return [this, exit_code, log](const SandboxJob& job) -> absl::StatusOr<int> {
      ++runs_;
      seen_ = job;
      const JobMount* venv = MountAt(job, "/venv");
      if (venv == nullptr || venv->read_only) return absl::InternalError("no rw /venv");
      if (job.output.empty() || job.output.rfind(venv->host + "/", 0) == 0) {
        return absl::InternalError("the log must be outside the job's writable mount");
      }
      testing::WriteTestFile(job.output, log);
      testing::WriteTestFile(venv->host + "/.zygo-tmp/pip-build/x", "");
      testing::WriteTestFile(venv->host + "/bin/python", "");
      return exit_code;
    };
  }

  std::string dir_;
  std::optional<Store> store_;
  RunnableImage image_;
  VenvRequest request_;
  int runs_ = 0;
  SandboxJob seen_;
};

TEST_F(VenvCache, KeysCoverTheImageAndTheFilesBytes) {
  std::string key = VenvKey(image_.manifest_digest, "a==1\n");
  EXPECT_EQ(key, VenvKey(image_.manifest_digest, "a==1\n"));
  EXPECT_NE(key, VenvKey(image_.manifest_digest, "a==1\n\n"));  // any edit
  EXPECT_NE(key, VenvKey("sha256:" + std::string(64, 'b'), "a==1\n"));
  EXPECT_EQ(key.substr(0, 7), "sha256:");
  // Venvs built before system layers existed keep their keys; one built over a system
  // layer is another venv, one per layer.
  EXPECT_EQ(key, Sha256Digest(absl::StrCat("zygo-venv-v1\n", image_.manifest_digest, "\na==1\n")));
  EXPECT_EQ(key, VenvKey(image_.manifest_digest, "a==1\n", ""));
  const std::string system_a = "sha256:" + std::string(64, 'c');
  const std::string system_b = "sha256:" + std::string(64, 'd');
  EXPECT_NE(key, VenvKey(image_.manifest_digest, "a==1\n", system_a));
  EXPECT_NE(VenvKey(image_.manifest_digest, "a==1\n", system_a),
            VenvKey(image_.manifest_digest, "a==1\n", system_b));
}

TEST_F(VenvCache, BuildsOnceWithTheImagesPipAndReusesIt) {
  request_.find_links = dir_ + "/wheels";
  fs::create_directories(request_.find_links);
  absl::StatusOr<Venv> venv = EnsureVenv(*store_, image_, image_.rootfs, request_, Fake());
  ASSERT_TRUE(venv.ok()) << venv.status();
  EXPECT_TRUE(venv->built);
  EXPECT_EQ(runs_, 1);
  EXPECT_EQ(venv->path, store_->root() + "/venvs/sha256/" + venv->key.substr(7));
  EXPECT_TRUE(fs::is_directory(image_.rootfs + "/venv"));  // the mountpoint
  // The build: the image's python and pip, the file staged in the venv, wheels at /tmp.
  std::string argv = absl::StrJoin(seen_.argv, " ");
  EXPECT_EQ(seen_.argv[0], "python3");
  EXPECT_TRUE(absl::StrContains(argv, "'--without-pip'")) << argv;
  EXPECT_TRUE(absl::StrContains(argv, "'--python', '/venv/bin/python'")) << argv;
  EXPECT_FALSE(absl::StrContains(argv, "ensurepip"));
  EXPECT_TRUE(
      absl::StrContains(argv, "--no-index --find-links /tmp -r /venv/zygo-requirements.txt"))
      << argv;
  ASSERT_NE(MountAt(seen_, "/tmp"), nullptr);
  EXPECT_TRUE(MountAt(seen_, "/tmp")->read_only);
  EXPECT_EQ(MountAt(seen_, "/tmp")->host, request_.find_links);
  EXPECT_EQ(seen_.rootfs, image_.rootfs);
  EXPECT_EQ(seen_.image_env, image_.config.env);
  // The result: the file's exact bytes kept, the log and pip's temp files gone.
  EXPECT_EQ(ReadTestFile(venv->path + "/zygo-requirements.txt"), "tinypkg==1.0\n");
  EXPECT_TRUE(fs::exists(venv->path + "/bin/python"));
  EXPECT_FALSE(fs::exists(venv->path + "/.zygo-tmp"));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
  // Reused: not built again, same directory.
  absl::StatusOr<Venv> again = EnsureVenv(*store_, image_, image_.rootfs, request_, Fake());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->built);
  EXPECT_EQ(again->path, venv->path);
  EXPECT_EQ(runs_, 1);
  // An edit makes a new one.
  testing::WriteTestFile(request_.requirements, "tinypkg==1.0\n# edited\n");
  absl::StatusOr<Venv> edited = EnsureVenv(*store_, image_, image_.rootfs, request_, Fake());
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_TRUE(edited->built);
  EXPECT_NE(edited->path, venv->path);
  EXPECT_TRUE(fs::exists(venv->path));
}

TEST_F(VenvCache, WithoutFindLinksPipUsesItsOwnConfiguration) {
  ASSERT_TRUE(EnsureVenv(*store_, image_, image_.rootfs, request_, Fake()).ok());
  EXPECT_EQ(MountAt(seen_, "/tmp"), nullptr);
  EXPECT_FALSE(absl::StrContains(absl::StrJoin(seen_.argv, " "), "--no-index"));
}

TEST_F(VenvCache, FailuresAreOneLineAndLeaveNothing) {
  absl::StatusOr<Venv> venv =
      EnsureVenv(*store_, image_, image_.rootfs, request_,
                 Fake(5,
                      "Looking in links: /tmp\n"
                      "ERROR: Could not find a version that satisfies the requirement nosuch (from "
                      "versions: none)\nERROR: No matching distribution found for nosuch\n"));
  ASSERT_FALSE(venv.ok());
  EXPECT_EQ(venv.status().message(),
            absl::StrCat("--requirements ", request_.requirements,
                         ": pip install failed: ERROR: No matching distribution found for nosuch"));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/venvs/sha256"));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));

  venv = EnsureVenv(*store_, image_, image_.rootfs, request_,
                    Fake(4, "/usr/bin/python3: No module named pip\n"));
  ASSERT_FALSE(venv.ok());
  EXPECT_TRUE(absl::StrContains(venv.status().message(), "the image has no pip")) << venv.status();
  EXPECT_TRUE(absl::StrContains(venv.status().message(), "No module named pip"));

  venv = EnsureVenv(*store_, image_, image_.rootfs, request_, [](const SandboxJob&) {
    return absl::StatusOr<int>(absl::DeadlineExceededError("timed out after 600 s"));
  });
  ASSERT_FALSE(venv.ok());
  EXPECT_TRUE(absl::StrContains(venv.status().message(), "the venv build timed out after 600 s"));

  request_.requirements = dir_ + "/missing.txt";
  venv = EnsureVenv(*store_, image_, image_.rootfs, request_, Fake());
  ASSERT_FALSE(venv.ok());
  EXPECT_TRUE(absl::StartsWith(venv.status().message(), "--requirements: ")) << venv.status();
  request_.requirements = dir_ + "/requirements.txt";
  request_.find_links = dir_ + "/no-wheels";
  venv = EnsureVenv(*store_, image_, image_.rootfs, request_, Fake());
  ASSERT_FALSE(venv.ok());
  EXPECT_TRUE(absl::StrContains(venv.status().message(), "not a directory"));
  EXPECT_EQ(runs_, 2);
  for (const std::string& message : {std::string(venv.status().message())}) {
    EXPECT_FALSE(absl::StrContains(message, "\n"));
  }
}

TEST_F(VenvCache, EnvironmentPutsTheVenvFirstOnTheImagesPath) {
  EXPECT_EQ(VenvEnvironment(image_.config.env),
            (std::vector<std::string>{"VIRTUAL_ENV=/venv", "PATH=/venv/bin:/usr/bin:/bin"}));
  EXPECT_EQ(VenvEnvironment({}),
            (std::vector<std::string>{
                "VIRTUAL_ENV=/venv",
                "PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}));
}

}  // namespace
}  // namespace zygo::images
