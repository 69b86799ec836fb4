// Images end to end through the CLI: the test images built from Debian packages
// (tools/images), real registries on 127.0.0.1 (testing/registry), and zygo's store in a
// temp directory. Pull, load, run with the image's config, images, rmi, prune, and the
// one-line errors for bad references, unknown tags, auth and digest failures.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testing/harness.h"
#include "testing/test_dir.h"

namespace zygo::testing {
namespace {

namespace fs = std::filesystem;

// Runs a tool script and returns the value of `KEY=` from its one-line report.
std::string ToolValue(const std::vector<std::string>& argv, const std::string& key) {
  RunResult result = RunOnHost(argv);
  EXPECT_EQ(result.exit_code, 0) << absl::StrJoin(argv, " ") << "\n" << result.err;
  std::smatch match;
  std::regex pattern(key + "=([^ \\n]+)");
  if (std::regex_search(result.out, match, pattern)) return match[1];
  ADD_FAILURE() << "no " << key << "= in: " << result.out;
  return "";
}

std::string BuildImage(const std::string& name) {
  absl::StatusOr<TestImage> image = BuildTestImage(name);
  EXPECT_TRUE(image.ok()) << image.status();
  return image.ok() ? image->layout : "";
}

class ImageCli : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = FreshTestDir("store-");
    options_.env = {"ZYGO_HOME=" + store_};
    options_.want_outcome = false;
  }
  void TearDown() override {
    for (const std::string& dir : registries_) RunOnHost({Runfile("testing/registry/stop"), dir});
  }

  // zygo <args...> with this test's store.
  RunResult Zygo(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZygoPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunOnHost(argv, options_);
  }

  // Starts a registry ("anonymous", "basic" or "bearer"); returns 127.0.0.1:PORT.
  std::string StartRegistry(const std::string& mode) {
    RunResult started = RunOnHost({Runfile("testing/registry/serve"), mode});
    EXPECT_EQ(started.exit_code, 0) << started.err;
    std::smatch match;
    std::regex dir("DIR=([^ \\n]+)"), registry("REGISTRY=([^ \\n]+)");
    if (std::regex_search(started.out, match, dir)) registries_.push_back(match[1]);
    if (std::regex_search(started.out, match, registry)) return match[1];
    ADD_FAILURE() << "serve printed: " << started.out;
    return "";
  }

  std::string Push(const std::string& image, const std::string& dest,
                   const std::string& creds = "") {
    std::vector<std::string> argv = {Runfile("testing/registry/push"), image, dest};
    if (!creds.empty()) {
      argv.push_back("--creds");
      argv.push_back(creds);
    }
    return ToolValue(argv, "DIGEST");
  }

  std::string store_;
  RunOptions options_;
  std::vector<std::string> registries_;
};

TEST_F(ImageCli, LoadThenRunWithTheImagesConfig) {
  RunResult loaded = Zygo({"load", BuildImage("busybox-multilayer"), "multi:test"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  // No command: Entrypoint + Cmd, as the image's User in its WorkingDir.
  RunResult hello = Zygo({"run", "multi:test"});
  EXPECT_EQ(hello.exit_code, 0) << hello.err;
  EXPECT_EQ(hello.out, "hello\n");
  RunResult config = Zygo({"run", "multi:test", "echo $FOO; pwd; id -u; id -g; env | sort"});
  EXPECT_EQ(config.out,
            "bar\n/work\n1000\n1000\nFOO=bar\nHOME=/tmp\nHOSTNAME=zygo\nPATH=/bin\n"
            "PWD=/work\nSHLVL=1\n")
      << config.err;
  // Flags override the config: -w, -u, -e.
  RunResult overridden =
      Zygo({"run", "-w", "/", "-u", "0", "-e", "FOO=baz", "multi:test", "echo $FOO; pwd; id -u"});
  EXPECT_EQ(overridden.out, "baz\n/\n0\n") << overridden.err;
  // Whiteouts, opaque directories and a file replaced by a directory, as layered.
  RunResult layers = Zygo({"run", "multi:test",
                           "ls /etc/removed-by-layer2 2>&1; ls /etc/kept; ls -A /opaque; "
                           "ls /replaced; find / -xdev -name '.wh.*' | wc -l"});
  EXPECT_EQ(layers.out,
            "ls: /etc/removed-by-layer2: No such file or directory\n/etc/kept\nfrom-layer2\n"
            "from-layer3\n0\n")
      << layers.err;
}

TEST_F(ImageCli, LoadsDockerArchivesAndIndexes) {
  std::string archive = BuildImage("busybox-docker");
  RunResult loaded = Zygo({"load", archive});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  RunResult ran = Zygo({"run", "busybox:latest", "echo", "from docker-archive"});
  EXPECT_EQ(ran.out, "from docker-archive\n") << ran.err;
  RunResult index = Zygo({"load", BuildImage("busybox-index"), "indexed:1"});
  ASSERT_EQ(index.exit_code, 0) << index.err;
  // The index's linux/amd64 entry is byte for byte the busybox manifest; arm64's differs.
  absl::StatusOr<TestImage> busybox = BuildTestImage("busybox");
  ASSERT_TRUE(busybox.ok()) << busybox.status();
  std::string amd64 = busybox->digest;
  EXPECT_TRUE(absl::StrContains(index.err, amd64)) << index.err;
  RunResult arch = Zygo({"run", "indexed:1", "busybox", "uname", "-m"});
  EXPECT_EQ(arch.out, "x86_64\n") << arch.err;
  RunResult images = Zygo({"images"});
  EXPECT_TRUE(absl::StrContains(images.out, "busybox:latest")) << images.out;
  EXPECT_TRUE(absl::StrContains(images.out, "indexed:1")) << images.out;
}

TEST_F(ImageCli, PullFromALoopbackRegistryAndRunOnFirstUse) {
  std::string registry = StartRegistry("anonymous");
  std::string digest = Push(BuildImage("busybox"), registry + "/tools/busybox:1");
  // --tls-verify=true insists on HTTPS, which this plain-HTTP registry cannot speak.
  RunResult https = Zygo({"pull", "--tls-verify=true", registry + "/tools/busybox:1"});
  EXPECT_EQ(https.exit_code, 125) << https.err;
  EXPECT_TRUE(absl::StrContains(https.err, "https://" + registry)) << https.err;
  // Pull-on-first-use through `zygo run`, over plain HTTP with no flag: the registry is on
  // loopback, as docker's default.
  RunResult ran = Zygo({"run", registry + "/tools/busybox:1", "echo", "ok"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ok\n");
  RunResult images = Zygo({"images"});
  EXPECT_TRUE(absl::StrContains(images.out, digest.substr(0, 19))) << images.out;
  // --pull=never finds it now; a different tag it refuses to fetch.
  EXPECT_EQ(Zygo({"run", "--pull=never", registry + "/tools/busybox:1", "true"}).exit_code, 0);
  RunResult never = Zygo({"run", "--pull=never", registry + "/tools/busybox:2", "true"});
  EXPECT_EQ(never.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(never.err, "--pull=never")) << never.err;
  // By digest.
  RunResult by_digest = Zygo({"pull", "--tls-verify=false", registry + "/tools/busybox@" + digest});
  EXPECT_EQ(by_digest.exit_code, 0) << by_digest.err;
  // rmi, then prune frees the layers.
  EXPECT_EQ(Zygo({"rmi", registry + "/tools/busybox:1"}).exit_code, 0);
  EXPECT_EQ(Zygo({"rmi", registry + "/tools/busybox@" + digest}).exit_code, 0);
  RunResult pruned = Zygo({"image", "prune"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_FALSE(absl::StrContains(pruned.out, "freed 0.0kB")) << pruned.out;
  EXPECT_TRUE(fs::is_empty(store_ + "/rootfs/sha256")) << "rootfs left after prune";
  // Pruned, so pulled again: with --progress=lines each step is a line of its own though
  // stderr is no terminal (the supervisor relays them to `zygo up`); without, only the end.
  RunResult lines = Zygo({"pull", "--progress=lines", registry + "/tools/busybox:1"});
  EXPECT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_TRUE(absl::StrContains(lines.err, "downloading sha256:")) << lines.err;
  EXPECT_GT(LineCount(lines.err), 1) << lines.err;
  ASSERT_EQ(Zygo({"rmi", registry + "/tools/busybox:1"}).exit_code, 0);
  ASSERT_EQ(Zygo({"image", "prune"}).exit_code, 0);
  RunResult quiet = Zygo({"pull", registry + "/tools/busybox:1"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(LineCount(quiet.err), 1) << quiet.err;
}

TEST_F(ImageCli, BadReferencesTagsAndAuthGetOneLineAnd125) {
  std::string registry = StartRegistry("basic");
  Push(BuildImage("busybox"), registry + "/private/busybox:1", "zygo:zygo-test-password");
  struct Case {
    std::vector<std::string> args;
    std::string message_part;
  };
  for (const Case& c : std::vector<Case>{
           {{"pull", "Bad/Reference"}, "lowercase"},
           {{"pull", "--tls-verify=false", registry + "/private/busybox:1"}, "zygo login"},
           {{"run", "--tls-verify=false", registry + "/private/busybox:1", "true"}, "zygo login"},
       }) {
    RunResult result = Zygo(c.args);
    EXPECT_EQ(result.exit_code, 125) << absl::StrJoin(c.args, " ");
    EXPECT_EQ(LineCount(result.err), 1) << result.err;
    EXPECT_TRUE(absl::StrContains(result.err, c.message_part)) << result.err;
  }
  // After `zygo login` the same pull works, and an unknown tag says so.
  RunOptions login = options_;
  login.env.push_back(absl::StrCat("XDG_CONFIG_HOME=", store_, "-config"));
  std::string password_file = store_ + "-password";
  FILE* f = fopen(password_file.c_str(), "w");
  fputs("zygo-test-password\n", f);
  fclose(f);
  login.stdin_fd = open(password_file.c_str(), O_RDONLY);
  RunResult logged_in =
      RunOnHost({ZygoPath(), "login", "-u", "zygo", "--password-stdin", registry}, login);
  close(login.stdin_fd);
  ASSERT_EQ(logged_in.exit_code, 0) << logged_in.err;
  options_ = login;
  options_.stdin_fd = -1;
  RunResult pulled = Zygo({"pull", "--tls-verify=false", registry + "/private/busybox:1"});
  EXPECT_EQ(pulled.exit_code, 0) << pulled.err;
  RunResult unknown = Zygo({"pull", "--tls-verify=false", registry + "/private/busybox:nope"});
  EXPECT_EQ(unknown.exit_code, 125);
  EXPECT_EQ(LineCount(unknown.err), 1) << unknown.err;
  EXPECT_TRUE(absl::StrContains(unknown.err, "manifest unknown")) << unknown.err;
}

TEST_F(ImageCli, ACorruptBlobIsRefusedAndLeavesNothingTrusted) {
  std::string registry = StartRegistry("anonymous");
  std::string image = BuildImage("busybox");
  Push(image, registry + "/corrupt/busybox:1");
  // Flip the stored layer's bytes (same size) inside the registry's own storage.
  std::string storage = registries_.back();
  bool corrupted = false;
  for (const auto& entry : fs::recursive_directory_iterator(storage)) {
    if (entry.path().filename() == "data" && fs::file_size(entry.path()) > 100000) {
      FILE* f = fopen(entry.path().c_str(), "r+");
      fseek(f, 50000, SEEK_SET);
      fputc('X', f);
      fclose(f);
      corrupted = true;
    }
  }
  ASSERT_TRUE(corrupted) << "no layer blob found under " << storage;
  RunResult pulled = Zygo({"pull", "--tls-verify=false", registry + "/corrupt/busybox:1"});
  EXPECT_EQ(pulled.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(pulled.err, "sha256")) << pulled.err;
  EXPECT_EQ(LineCount(pulled.err), 1) << pulled.err;
  EXPECT_TRUE(Zygo({"images"}).out.find("corrupt") == std::string::npos);
}

}  // namespace
}  // namespace zygo::testing

namespace zygo::testing {
namespace {

// A pull killed at any moment leaves a store the next pull uses or repairs, and two
// pulls of the same image at once both succeed.
TEST_F(ImageCli, KilledAndConcurrentPullsLeaveAUsableStore) {
  std::string registry = StartRegistry("anonymous");
  std::string ref = registry + "/tools/multi:1";
  Push(BuildImage("busybox-multilayer"), ref);
  for (int delay_ms : {0, 2, 5, 10, 20, 40, 80}) {
    fs::remove_all(store_);
    std::vector<std::string> argv = {ZygoPath(), "pull", "--tls-verify=false", ref};
    pid_t pid = fork();
    if (pid == 0) {
      for (const std::string& var : options_.env) putenv(const_cast<char*>(var.c_str()));
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      std::vector<char*> args;
      for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    usleep(delay_ms * 1000);
    kill(pid, SIGKILL);  // zygo execs zygo-image in place, so this is the puller itself
    waitpid(pid, nullptr, 0);
    RunResult again = Zygo({"pull", "--tls-verify=false", ref});
    ASSERT_EQ(again.exit_code, 0) << "after a kill at " << delay_ms << " ms: " << again.err;
    RunResult ran = Zygo({"run", ref});
    EXPECT_EQ(ran.out, "hello\n") << "after a kill at " << delay_ms << " ms: " << ran.err;
  }
  fs::remove_all(store_);
  std::vector<pid_t> pullers;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (const std::string& var : options_.env) putenv(const_cast<char*>(var.c_str()));
      std::string zygo = ZygoPath();
      execl(zygo.c_str(), zygo.c_str(), "pull", "--tls-verify=false", ref.c_str(), nullptr);
      _exit(127);
    }
    pullers.push_back(pid);
  }
  for (pid_t pid : pullers) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(Zygo({"run", ref}).out, "hello\n");
}

}  // namespace
}  // namespace zygo::testing
