// Python images through `zygo run`: the bytecode layer (built once on first use, used
// after, off with ZYGO_BYTECODE=0, a failed build a warning and never a failed run) and
// cached venvs (--requirements: built once, reused, rebuilt on edit, read-only, one-line
// errors), and the same venvs for warm functions (`requirements` in a spec, shared with
// `zygo run --requirements`; a failed build remembered). Uses the opt-in Debian test images
// `python` and `python-pip` (tools/images), and a wheel and a broken "python" image the
// test makes itself.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"
#include "testing/test_dir.h"

extern char** environ;

namespace zygo::testing {
namespace {

// testing/python/make_tinypkg_wheel.py: DIR GREETING -> DIR/tinypkg-1.0-py3-none-any.whl.
std::string WheelScript() { return testing::Runfile("testing/python/make_tinypkg_wheel.py"); }

namespace fs = std::filesystem;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Prints whether json's .pyc exists next to its source and, if so, the .pyc's flags word
// (PEP 552: 1 = hash-based, source not checked).
constexpr char kBytecodeProbe[] = R"(import importlib.util, json, os
cached = importlib.util.cache_from_source(json.__file__)
print(os.path.exists(cached))
if os.path.exists(cached):
    print(int.from_bytes(open(cached, 'rb').read()[4:8], 'little'))
)";

// What python -v says when it really loads json from the layer's .pyc.
constexpr char kLoadedFromPyc[] =
    "code object from '/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc'";

// A busybox image with a Python 3.11 stdlib source (so the layer is wanted) and a
// python3.11 that always fails (so its build fails). Args: tools/images dir, output dir.
constexpr char kBrokenImageScript[] = R"(set -euo pipefail
IMAGES_DIR=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source "$IMAGES_DIR/lib.sh"
source "$IMAGES_DIR/recipes/busybox.sh"
busybox_rootfs "$WORK/rootfs"
put_file "$WORK/rootfs/usr/lib/python3.11/os.py" 0644 'import posix
'
put_file "$WORK/rootfs/usr/bin/python3.11" 0755 '#!/bin/sh
echo "python3.11: this python always fails" >&2
exit 1
'
make_layer_tar "$WORK/rootfs" "$WORK/layer.tar"
oci image "$2" --ref latest --layer "$WORK/layer.tar" \
  --config '{"Env":["PATH=/bin:/usr/bin"],"Cmd":["sh"]}' >/dev/null
)";

class PythonImageCli : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = FreshTestDir();
    store_ = scratch_ + "/store";
    options_.env = {"ZYGO_HOME=" + store_};
    options_.want_outcome = false;
    options_.timeout_seconds = 600;
  }

  RunResult Zygo(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {ZygoPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options = options_;
    options.env.insert(options.env.end(), env.begin(), env.end());
    return RunOnHost(argv, options);
  }

  // Builds a test image (cached across tests and runs) and loads it as `name`. Returns
  // its manifest digest, or "" with the reason when the host cannot build it.
  std::string Load(const std::string& image, const std::string& name, std::string* why) {
    absl::StatusOr<TestImage> built = BuildTestImage(image, options_);
    if (!built.ok()) {
      *why = absl::StrCat(built.status().message(), " (needs root and the Debian mirror)");
      return "";
    }
    RunResult loaded = Zygo({"load", built->layout, name});
    EXPECT_EQ(loaded.exit_code, 0) << loaded.err;
    return built->digest;
  }

  std::vector<std::string> Venvs() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(store_ + "/venvs/sha256", ec)) {
      names.push_back(entry.path().string());
    }
    return names;
  }

  std::string scratch_;
  std::string store_;
  RunOptions options_;
};

#define LOAD_OR_SKIP(image, name, digest)                \
  std::string why_##digest;                              \
  std::string digest = Load(image, name, &why_##digest); \
  if (digest.empty()) GTEST_SKIP() << why_##digest

TEST_F(PythonImageCli, BytecodeLayerIsBuiltOnFirstUseAndUsedAfter) {
  LOAD_OR_SKIP("python", "py:test", digest);
  // First use builds it; python really loads json from its unchecked-hash .pyc.
  RunResult first = Zygo({"-v", "run", "py:test", "python3", "-v", "-c", kBytecodeProbe});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "True\n1\n");
  EXPECT_EQ(Count(first.err, "zygo: built docker.io/library/py:test+bytecode."), 1) << first.err;
  EXPECT_TRUE(absl::StrContains(first.err, kLoadedFromPyc));
  // Later uses find it.
  RunResult second = Zygo({"-v", "run", "py:test", "python3", "-v", "-c", kBytecodeProbe});
  EXPECT_EQ(second.out, "True\n1\n") << second.err;
  EXPECT_FALSE(absl::StrContains(second.err, "zygo: built")) << second.err;
  EXPECT_TRUE(absl::StrContains(second.err, kLoadedFromPyc));
  // Listed as a derived image; the image's own root is untouched, and the derived root
  // shares its files' inodes (a hard-linked copy, not a second image).
  RunResult images = Zygo({"images"});
  EXPECT_TRUE(absl::StrContains(images.out, "py:test+bytecode.")) << images.out;
  std::string base = absl::StrCat(store_, "/rootfs/sha256/", digest.substr(7));
  EXPECT_FALSE(fs::exists(base + "/usr/lib/python3.11/__pycache__"));
  std::smatch key;
  ASSERT_TRUE(std::regex_search(images.out, key,
                                std::regex("\\+bytecode\\.[0-9a-f]+ +sha256:([0-9a-f]+)")));
  int derived_roots = 0;
  for (const auto& entry : fs::directory_iterator(store_ + "/rootfs/sha256")) {
    std::string name = entry.path().filename().string();
    if (name == digest.substr(7) || name.rfind(key[1], 0) != 0) continue;
    ++derived_roots;
    struct stat a, b;
    ASSERT_EQ(stat((base + "/usr/bin/python3.11").c_str(), &a), 0);
    ASSERT_EQ(stat((entry.path().string() + "/usr/bin/python3.11").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
  }
  EXPECT_EQ(derived_roots, 1);
  // ZYGO_BYTECODE=0: the image as it is.
  RunResult off = Zygo({"run", "py:test", "python3", "-c", kBytecodeProbe}, {"ZYGO_BYTECODE=0"});
  EXPECT_EQ(off.out, "False\n") << off.err;
  // A prune keeps it (its record references it): no second build.
  ASSERT_EQ(Zygo({"image", "prune"}).exit_code, 0);
  RunResult pruned = Zygo({"-v", "run", "py:test", "python3", "-c", kBytecodeProbe});
  EXPECT_EQ(pruned.out, "True\n1\n") << pruned.err;
  EXPECT_FALSE(absl::StrContains(pruned.err, "zygo: built")) << pruned.err;
  // rmi of the image takes its derived root with it; a prune then frees everything.
  RunResult listed = Zygo({"images"});
  ASSERT_TRUE(absl::StrContains(listed.out, "+bytecode.")) << listed.out;
  RunResult removed = Zygo({"rmi", "py:test"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(absl::StrContains(removed.out, "+bytecode.")) << removed.out;
  EXPECT_FALSE(absl::StrContains(Zygo({"images"}).out, "py:test"));
  ASSERT_EQ(Zygo({"image", "prune"}).exit_code, 0);
  EXPECT_TRUE(fs::is_empty(store_ + "/rootfs/sha256")) << "roots left after rmi + prune";
}

TEST_F(PythonImageCli, ConcurrentFirstRunsBuildTheLayerOnce) {
  LOAD_OR_SKIP("python", "py:test", digest);
  RunResult results[3];
  std::vector<std::thread> threads;
  for (RunResult& result : results) {
    threads.emplace_back([&] {
      result = Zygo({"-v", "run", "py:test", "python3", "-c", kBytecodeProbe});
    });
  }
  for (std::thread& thread : threads) thread.join();
  int builds = 0;
  for (const RunResult& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "True\n1\n") << result.err;
    builds += Count(result.err, "zygo: built");
  }
  EXPECT_EQ(builds, 1);
  EXPECT_TRUE(fs::is_empty(store_ + "/tmp"));
}

TEST_F(PythonImageCli, AFailedBuildIsOneWarningAndTheOriginalImage) {
  std::string layout = scratch_ + "/broken";
  RunResult made =
      RunOnHost({"/bin/bash", "-c", kBrokenImageScript, "bash", Runfile("tools/images"), layout});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_EQ(Zygo({"load", layout, "broken:test"}).exit_code, 0);
  RunResult ran = Zygo({"run", "broken:test", "sh", "-c", "echo ran; ls /usr/lib/python3.11"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\nos.py\n");
  EXPECT_EQ(LineCount(ran.err), 1) << ran.err;
  EXPECT_TRUE(absl::StartsWith(
      ran.err, "zygo: warning: no bytecode layer for docker.io/library/broken:test ("))
      << ran.err;
  EXPECT_TRUE(absl::StrContains(ran.err, "exited 1: python3.11: this python always fails"))
      << ran.err;
  EXPECT_FALSE(absl::StrContains(Zygo({"images"}).out, "+bytecode")) << "no derived image";
  EXPECT_TRUE(fs::is_empty(store_ + "/tmp"));
  // Off: no attempt, no warning.
  RunResult off = Zygo({"run", "broken:test", "echo", "quiet"}, {"ZYGO_BYTECODE=0"});
  EXPECT_EQ(off.out, "quiet\n");
  EXPECT_EQ(off.err, "");
}

TEST_F(PythonImageCli, VenvIsBuiltOnceReusedAndRebuiltOnEdit) {
  LOAD_OR_SKIP("python-pip", "pypip:test", digest);
  std::string wheels = scratch_ + "/wheels", requirements = scratch_ + "/requirements.txt";
  fs::create_directories(wheels);
  ASSERT_EQ(RunOnHost({"/usr/bin/python3", WheelScript(), wheels, "hello from tinypkg"}).exit_code,
            0);
  std::ofstream(requirements) << "tinypkg==1.0\n";
  std::vector<std::string> flags = {"-v",           "run",  "--requirements", requirements,
                                    "--find-links", wheels, "pypip:test"};
  auto with = [&](std::vector<std::string> command) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), command.begin(), command.end());
    return Zygo(args);
  };
  const std::string probe = "import sys, tinypkg; print(tinypkg.GREETING, sys.prefix)";
  RunResult first = with({"python3", "-c", probe});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "hello from tinypkg /venv\n");
  EXPECT_EQ(Count(first.err, "zygo: venv sha256:"), 1) << first.err;
  EXPECT_TRUE(absl::StrContains(first.err, " built in ")) << first.err;
  ASSERT_EQ(Venvs().size(), 1u);
  struct stat built;
  ASSERT_EQ(stat(Venvs()[0].c_str(), &built), 0);

  // Reused: the same directory, not rebuilt; read-only inside (with a writable control).
  RunResult second = with({"sh", "-c",
                           "python3 -c 'import tinypkg'; echo $VIRTUAL_ENV; "
                           "touch /tmp/ok && echo tmp-writable; touch /venv/x 2>&1; "
                           "touch /venv/lib/x 2>&1; true"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(absl::StrContains(second.err, "reused")) << second.err;
  EXPECT_FALSE(absl::StrContains(second.err, "built in")) << second.err;
  EXPECT_EQ(second.out,
            "/venv\ntmp-writable\n"
            "touch: cannot touch '/venv/x': Read-only file system\n"
            "touch: cannot touch '/venv/lib/x': Read-only file system\n");
  ASSERT_EQ(Venvs().size(), 1u);
  struct stat reused;
  ASSERT_EQ(stat(Venvs()[0].c_str(), &reused), 0);
  EXPECT_EQ(reused.st_ino, built.st_ino);
  EXPECT_EQ(reused.st_mtim.tv_nsec, built.st_mtim.tv_nsec);
  EXPECT_EQ(reused.st_mtim.tv_sec, built.st_mtim.tv_sec);

  // Any edit to the file (a comment will do) makes a new venv; the old one stays.
  std::ofstream(requirements, std::ios::app) << "# edited\n";
  RunResult edited = with({"python3", "-c", probe});
  EXPECT_EQ(edited.out, "hello from tinypkg /venv\n") << edited.err;
  EXPECT_TRUE(absl::StrContains(edited.err, " built in ")) << edited.err;
  EXPECT_EQ(Venvs().size(), 2u);
  EXPECT_TRUE(fs::is_empty(store_ + "/tmp"));

  // A prune keeps the venvs of a recorded image; once the image is removed, they go too.
  ASSERT_EQ(Zygo({"image", "prune"}).exit_code, 0);
  EXPECT_EQ(Venvs().size(), 2u);
  ASSERT_EQ(Zygo({"rmi", "pypip:test"}).exit_code, 0);
  RunResult pruned = Zygo({"image", "prune"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_EQ(Venvs().size(), 0u) << pruned.out;
}

TEST_F(PythonImageCli, VenvFailuresAreExit125AndOneLine) {
  LOAD_OR_SKIP("python-pip", "pypip:test", digest);
  std::string wheels = scratch_ + "/wheels", requirements = scratch_ + "/requirements.txt";
  fs::create_directories(wheels);
  std::ofstream(requirements) << "nosuch==9\n";
  RunResult bad =
      Zygo({"run", "--requirements", requirements, "--find-links", wheels, "pypip:test", "true"});
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_EQ(bad.err, absl::StrCat("zygo: --requirements ", requirements,
                                  ": pip install failed: ERROR: No matching distribution found "
                                  "for nosuch==9\n"));
  EXPECT_TRUE(Venvs().empty());
  EXPECT_TRUE(fs::is_empty(store_ + "/tmp"));
  // An image without pip: zygo uses the image's own pip and says so.
  LOAD_OR_SKIP("python", "py:test", plain);
  RunResult no_pip =
      Zygo({"run", "--requirements", requirements, "py:test", "true"}, {"ZYGO_BYTECODE=0"});
  EXPECT_EQ(no_pip.exit_code, 125);
  EXPECT_EQ(LineCount(no_pip.err), 1) << no_pip.err;
  EXPECT_TRUE(absl::StrContains(no_pip.err, "the image has no pip")) << no_pip.err;
  // Flag misuse.
  RunResult alone = Zygo({"run", "--find-links", wheels, "pypip:test", "true"});
  EXPECT_EQ(alone.exit_code, 125);
  EXPECT_EQ(alone.err, "zygo: --find-links goes with --requirements\n");
  RunResult missing = Zygo({"run", "--requirements", scratch_ + "/nope.txt", "pypip:test", "true"});
  EXPECT_EQ(missing.exit_code, 125);
  EXPECT_EQ(LineCount(missing.err), 1) << missing.err;
}

// A warm function with `requirements` gets the venv `zygo run --requirements` builds: the
// first function builds it, a second on the same image and file and then `zygo run` reuse
// it (one venv, the same inode). A requirements file pip cannot satisfy fails `zygo up`
// with pip's line, and a request after it gets the remembered failure, not a rebuild.
TEST_F(PythonImageCli, FunctionsShareTheVenvOfTheirRequirements) {
  LOAD_OR_SKIP("python-pip", "pypip:test", digest);
  const std::string code = scratch_ + "/code";
  fs::create_directories(code + "/wheels");
  ASSERT_EQ(RunOnHost({"/usr/bin/python3", WheelScript(), code + "/wheels", "hello from tinypkg"})
                .exit_code,
            0);
  std::ofstream(code + "/requirements.txt") << "tinypkg==1.0\n";
  std::ofstream(code + "/bad.txt") << "nosuch==9\n";
  std::ofstream(code + "/handler.py")
      << "import sys, tinypkg\ndef main(event):\n    return [tinypkg.GREETING, sys.prefix]\n";
  std::ofstream(code + "/plain.py") << "def main(event):\n    return 1\n";
  SupervisorProcess::Options options;
  for (char** entry = environ; *entry != nullptr; ++entry) options.env.push_back(*entry);
  options.env.push_back("ZYGO_HOME=" + store_);
  absl::StatusOr<std::unique_ptr<SupervisorProcess>> supervisor = SupervisorProcess::Start(options);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const std::string socket = (*supervisor)->http_socket();
  const auto up = [&](const std::string& name, const std::string& entry,
                      const std::string& requirements) {
    const std::string spec = absl::StrCat(code, "/", name, ".toml");
    std::ofstream(spec) << "name = \"" << name << "\"\nimage = \"pypip:test\"\nentry = \"" << entry
                        << "\"\nrequirements = \"" << requirements
                        << "\"\nfind_links = \"wheels\"\n[limits]\ntimeout = \"20s\"\n";
    return Zygo({"up", "--socket", socket, spec});
  };

  ASSERT_TRUE(Venvs().empty());
  RunResult first = up("first", "handler.py:main", "requirements.txt");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunResult answer = Zygo({"exec", "--socket", socket, "first"});
  EXPECT_EQ(answer.out, "[\"hello from tinypkg\",\"/venv\"]\n") << answer.err;
  ASSERT_EQ(Venvs().size(), 1u);
  struct stat built;
  ASSERT_EQ(stat(Venvs()[0].c_str(), &built), 0);
  ASSERT_EQ(up("second", "handler.py:main", "requirements.txt").exit_code, 0);
  EXPECT_EQ(Zygo({"exec", "--socket", socket, "second"}).out, answer.out);
  RunResult run = Zygo({"-v", "run", "--requirements", code + "/requirements.txt", "--find-links",
                        code + "/wheels", "pypip:test", "python3", "-c", "import tinypkg"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(absl::StrContains(run.err, "reused")) << run.err;
  ASSERT_EQ(Venvs().size(), 1u) << "one venv for both functions and the run";
  struct stat reused;
  ASSERT_EQ(stat(Venvs()[0].c_str(), &reused), 0);
  EXPECT_EQ(reused.st_ino, built.st_ino);

  RunResult bad = up("bad", "plain.py:main", "bad.txt");
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_EQ(LineCount(bad.err), 1) << bad.err;
  EXPECT_TRUE(absl::StrContains(bad.err, "No matching distribution found for nosuch==9"))
      << bad.err;
  RunResult again = Zygo({"exec", "--socket", socket, "bad"});
  EXPECT_EQ(again.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(again.err, "remembered")) << again.err;
  EXPECT_EQ(Venvs().size(), 1u);
}

}  // namespace
}  // namespace zygo::testing
