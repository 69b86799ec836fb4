// The bytecode layer's logic with a fake SandboxRunner that plays compileall: detection,
// keys, where the .pyc files land, records, reuse, failures and what a job's output may
// not do. No privileges, no sandbox (the real build is in bytecode_run_test).
#include "images/bytecode_layer.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
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

// The host directory mounted at `sandbox` in `job`, or "".
std::string HostOf(const SandboxJob& job, const std::string& sandbox) {
  for (const JobMount& mount : job.mounts) {
    if (mount.sandbox == sandbox) return mount.host;
  }
  return "";
}

// What compileall with -X pycache_prefix=/tmp/pyc does: out/pyc/<dir>/<stem>.cpython-311.pyc
// for every .py under the last argument.
absl::StatusOr<int> FakeCompile(const SandboxJob& job) {
  std::string out = HostOf(job, "/tmp");
  std::string dir = job.argv.back();
  for (const auto& entry : fs::recursive_directory_iterator(job.rootfs + dir)) {
    if (entry.path().extension() != ".py") continue;
    std::string rel = entry.path().lexically_relative(job.rootfs).parent_path().string();
    testing::WriteTestFile(
        absl::StrCat(out, "/pyc/", rel, "/", entry.path().stem().string(), ".cpython-311.pyc"),
        "pyc of " + entry.path().filename().string());
  }
  return 0;
}

class BytecodeLayer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = zygo::testing::FreshTestDir();
    absl::StatusOr<Store> store = Store::Open(dir_ + "/store");
    ASSERT_TRUE(store.ok()) << store.status();
    store_.emplace(std::move(*store));
  }

  // An image recorded as docker.io/library/py:test whose root `fill` made.
  RunnableImage AddImage(const std::function<void(const std::string&)>& fill) {
    std::string config = R"({"config":{"Env":["PATH=/usr/bin:/bin"]},"rootfs":{"diff_ids":[]}})";
    std::string manifest =
        absl::StrCat(R"({"schemaVersion":2,"config":")", Sha256Digest(config), R"("})");
    EXPECT_TRUE(store_->PutBlob(Sha256Digest(config), config).ok());
    EXPECT_TRUE(store_->PutBlob(Sha256Digest(manifest), manifest).ok());
    std::string temp = store_->TempPath("rootfs");
    fs::create_directories(temp + "/tmp");
    fill(temp);
    EXPECT_TRUE(store_->CommitRootfsDir(Sha256Digest(manifest), temp).ok());
    ImageRecord record;
    record.reference = "docker.io/library/py:test";
    record.manifest_digest = Sha256Digest(manifest);
    record.config_digest = Sha256Digest(config);
    record.size_bytes = 1000;
    EXPECT_TRUE(store_->Record(record).ok());
    RunnableImage image;
    image.reference = record.reference;
    image.manifest_digest = record.manifest_digest;
    image.rootfs = store_->RootfsPath(record.manifest_digest);
    image.config.env = {"PATH=/usr/bin:/bin"};
    return image;
  }

  static void Stdlib(const std::string& root) {
    testing::WriteTestFile(root + "/usr/lib/python3.11/os.py", "import posix\n");
    testing::WriteTestFile(root + "/usr/lib/python3.11/json/__init__.py", "");
    testing::WriteTestFile(root + "/usr/lib/python3.11/json/decoder.py", "");
    testing::WriteTestFile(root + "/usr/bin/python3.11", "#!binary");
  }

  std::string dir_;
  std::optional<Store> store_;
};

TEST_F(BytecodeLayer, FindsOnlyStdlibsWithSourcesAndNoBytecode) {
  std::string root = dir_ + "/root";
  fs::create_directories(root + "/usr/lib/python3");  // Debian's dist-packages parent
  EXPECT_TRUE(FindUncompiledStdlib(root).empty());
  EXPECT_TRUE(FindUncompiledStdlib(dir_ + "/missing").empty());
  testing::WriteTestFile(root + "/usr/local/lib/python3.12/os.py", "");
  testing::WriteTestFile(root + "/usr/lib/python3.11/os.py", "");
  testing::WriteTestFile(root + "/usr/bin/python3.11", "");
  testing::WriteTestFile(root + "/usr/lib/python3.10d/os.py", "");  // not a stdlib name
  fs::create_directory_symlink("python3.11", root + "/usr/lib/python3.9");
  std::vector<StdlibDir> found = FindUncompiledStdlib(root);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].dir, "/usr/local/lib/python3.12");
  EXPECT_EQ(found[0].cache_tag, "cpython-312");
  EXPECT_EQ(found[0].python, "python3");  // no /usr/local/bin/python3.12
  EXPECT_EQ(found[1].dir, "/usr/lib/python3.11");
  EXPECT_EQ(found[1].python, "/usr/bin/python3.11");
  // Compiled already: nothing to do.
  testing::WriteTestFile(root + "/usr/lib/python3.11/__pycache__/os.cpython-311.pyc", "");
  testing::WriteTestFile(root + "/usr/local/lib/python3.12/__pycache__/os.cpython-312.pyc", "");
  EXPECT_TRUE(FindUncompiledStdlib(root).empty());
}

TEST_F(BytecodeLayer, KeysAndReferencesDependOnlyOnTheManifest) {
  std::string a = BytecodeKey("sha256:" + std::string(64, 'a'));
  EXPECT_EQ(a, BytecodeKey("sha256:" + std::string(64, 'a')));
  EXPECT_NE(a, BytecodeKey("sha256:" + std::string(64, 'b')));
  EXPECT_EQ(a, Sha256Digest(BytecodeKeyDocument("sha256:" + std::string(64, 'a'))));
  EXPECT_EQ(BytecodeReference("docker.io/library/python:3.12-slim", a),
            "docker.io/library/python:3.12-slim+bytecode." + a.substr(7, 12));
}

TEST_F(BytecodeLayer, BuildsOnceNextToTheSourcesAndRecordsTheDerivedImage) {
  RunnableImage image = AddImage(Stdlib);
  int runs = 0;
  SandboxJob seen;
  SandboxRunner run = [&](const SandboxJob& job) {
    ++runs;
    seen = job;
    return FakeCompile(job);
  };
  absl::StatusOr<std::optional<BytecodeRoot>> root = EnsureBytecodeRoot(*store_, image, run);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_TRUE(root->has_value());
  EXPECT_TRUE((*root)->built);
  EXPECT_EQ((*root)->pyc_files, 3);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(seen.rootfs, image.rootfs);
  EXPECT_EQ(seen.argv[0], "/usr/bin/python3.11");
  EXPECT_EQ(absl::StrJoin(seen.argv, " "),
            "/usr/bin/python3.11 -I -X pycache_prefix=/tmp/pyc -m compileall -q -j0 "
            "--invalidation-mode unchecked-hash /usr/lib/python3.11");
  EXPECT_FALSE(seen.output.empty());
  EXPECT_EQ(seen.argv.back(), "/usr/lib/python3.11");
  EXPECT_EQ(seen.memory_bytes, 1LL << 30);
  std::string derived = (*root)->rootfs;
  EXPECT_EQ(derived, store_->RootfsPath(BytecodeKey(image.manifest_digest)));
  std::string lib = derived + "/usr/lib/python3.11";
  EXPECT_TRUE(fs::is_regular_file(lib + "/__pycache__/os.cpython-311.pyc"));
  EXPECT_TRUE(fs::is_regular_file(lib + "/json/__pycache__/decoder.cpython-311.pyc"));
  EXPECT_TRUE(fs::is_regular_file(lib + "/os.py"));
  EXPECT_FALSE(fs::exists(image.rootfs + "/usr/lib/python3.11/__pycache__"));  // base untouched
  // Recorded: the derived reference, its key document as a blob.
  absl::StatusOr<std::vector<ImageRecord>> records = store_->List();
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[1].reference, (*root)->reference);
  EXPECT_TRUE(absl::StrContains((*root)->reference, "py:test+bytecode."));
  EXPECT_TRUE(store_->HasBlob((*records)[1].manifest_digest));
  // tmp/ holds nothing of the build.
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
  // Second use: found, not built.
  root = EnsureBytecodeRoot(*store_, image, run);
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_FALSE((*root)->built);
  EXPECT_EQ((*root)->rootfs, derived);
  EXPECT_EQ(runs, 1);
  // A prune keeps it: the derived record references it.
  ASSERT_TRUE(store_->Prune().ok());
  EXPECT_TRUE(fs::exists(lib + "/__pycache__/os.cpython-311.pyc"));
}

TEST_F(BytecodeLayer, AnImageWithoutPythonNeedsNone) {
  RunnableImage image =
      AddImage([](const std::string& root) { testing::WriteTestFile(root + "/bin/sh", ""); });
  int runs = 0;
  absl::StatusOr<std::optional<BytecodeRoot>> root =
      EnsureBytecodeRoot(*store_, image, [&](const SandboxJob&) {
        ++runs;
        return absl::StatusOr<int>(0);
      });
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_FALSE(root->has_value());
  EXPECT_EQ(runs, 0);
}

TEST_F(BytecodeLayer, AFailedCompileIsAnErrorWithTheLogsLastLineAndLeavesNothing) {
  RunnableImage image = AddImage(Stdlib);
  SandboxRunner fail = [](const SandboxJob& job) {
    EXPECT_NE(job.output.find("/tmp/"), std::string::npos);  // the store's tmp/, not the mount
    EXPECT_EQ(job.output.find(HostOf(job, "/tmp") + "/"), std::string::npos);
    testing::WriteTestFile(job.output, "Traceback ...\nSyntaxError: boom\n\n");
    return absl::StatusOr<int>(1);
  };
  absl::StatusOr<std::optional<BytecodeRoot>> root = EnsureBytecodeRoot(*store_, image, fail);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().message(),
            "/usr/bin/python3.11 -m compileall /usr/lib/python3.11 exited 1: SyntaxError: boom");
  EXPECT_FALSE(store_->HasRootfs(BytecodeKey(image.manifest_digest)));
  EXPECT_TRUE(fs::is_empty(store_->root() + "/tmp"));
  // A sandbox that did not run to an exit says why.
  root = EnsureBytecodeRoot(*store_, image, [](const SandboxJob&) {
    return absl::StatusOr<int>(absl::DeadlineExceededError("timed out after 600 s"));
  });
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().message(), "compiling /usr/lib/python3.11: timed out after 600 s");
  // Exit 0 without bytecode (not CPython, or too old for pycache_prefix) is a failure too.
  root =
      EnsureBytecodeRoot(*store_, image, [](const SandboxJob&) { return absl::StatusOr<int>(0); });
  ASSERT_FALSE(root.ok());
  EXPECT_TRUE(absl::StrContains(root.status().message(), "compileall made no")) << root.status();
}

TEST_F(BytecodeLayer, TheJobsOutputCannotPlaceFilesThroughSymlinksOrWithoutSources) {
  std::string victim = dir_ + "/victim";
  fs::create_directories(victim);
  RunnableImage image = AddImage([&](const std::string& root) {
    Stdlib(root);
    fs::create_directory_symlink(victim, root + "/usr/lib/python3.11/evil");
  });
  SandboxRunner run = [&](const SandboxJob& job) {
    std::string pyc = HostOf(job, "/tmp") + "/pyc/usr/lib/python3.11";
    testing::WriteTestFile(pyc + "/evil/x.cpython-311.pyc", "through a symlink");
    testing::WriteTestFile(pyc + "/nosource.cpython-311.pyc", "no nosource.py");
    testing::WriteTestFile(pyc + "/os.cpython-312.pyc", "wrong tag");
    return FakeCompile(job);
  };
  absl::StatusOr<std::optional<BytecodeRoot>> root = EnsureBytecodeRoot(*store_, image, run);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ((*root)->pyc_files, 3);
  EXPECT_TRUE(fs::is_empty(victim));
  std::string cache = (*root)->rootfs + "/usr/lib/python3.11/__pycache__";
  EXPECT_FALSE(fs::exists(cache + "/nosource.cpython-311.pyc"));
  EXPECT_FALSE(fs::exists(cache + "/os.cpython-312.pyc"));
}

}  // namespace
}  // namespace zygo::images
