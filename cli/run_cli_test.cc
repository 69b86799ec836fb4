// `zygo run` end to end: exit codes, streams, signals, bad input, --dry-run, --outcome,
// -v timing, dir: images and the rootless path.
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

TEST(RunCli, ExitCodesPassThrough) {
  EXPECT_EQ(RunZygo({}, "host", {"/bin/true"}).exit_code, 0);
  EXPECT_EQ(RunZygo({}, "host", {"/bin/sh", "-c", "exit 3"}).exit_code, 3);
  RunResult signaled = RunZygo({}, "host", {"/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(signaled.exit_code, 143);
  EXPECT_EQ(OutcomeField(signaled, "status"), "\"signaled\"");
  EXPECT_EQ(OutcomeField(signaled, "signal"), "15");
  RunResult missing = RunZygo({}, "host", {"no-such-command"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(LineCount(missing.err), 1) << missing.err;
  RunResult not_executable = RunZygo({}, "host", {"/etc/passwd"});
  EXPECT_EQ(not_executable.exit_code, 126) << not_executable.err;
}

TEST(RunCli, BadInputGetsOneClearLineAnd125) {
  struct Case {
    std::vector<std::string> flags;
    std::string image;
    std::string message_part;
    bool flags_parsed;  // only then can --outcome be trusted and written
  };
  for (const Case& c : std::vector<Case>{
           {{"--bogus"}, "host", "unknown flag --bogus", false},
           {{"-m", "12q"}, "host", "unknown unit 'q'", false},
           {{}, "dir:/no/such/image", "/no/such/image", true},
           {{"--pull=never"}, "nosuchimage", "is not in the store", true},
           {{"-v", "/no/such/src:/data"}, "host", "/no/such/src", true},
       }) {
    RunResult result = RunZygo(c.flags, c.image, {"/bin/true"});
    EXPECT_EQ(result.exit_code, 125) << c.message_part;
    EXPECT_EQ(LineCount(result.err), 1) << result.err;
    EXPECT_TRUE(absl::StrContains(result.err, c.message_part)) << result.err;
    if (c.flags_parsed) {
      EXPECT_EQ(OutcomeField(result, "status"), "\"setup_error\"") << result.outcome_json;
    }
  }
  EXPECT_TRUE(LeftoverCgroups().empty());
}

// A container's /proc as docker and systemd-nspawn make it by default: parts mounted over.
// A sandbox cannot mount a proc of its own there; the run must say so and how to fix it.
TEST(RunCli, MaskedProcIsRefusedNamingTheContainerFix) {
  struct Case {
    std::string name;
    std::string mask;   // shell, in a mount namespace of the test's own
    std::string proof;  // shell: succeeds only once the mask is in place
  };
  for (const Case& c : std::vector<Case>{
           {"no mask (control)", "true", "true"},
           {"read-only /proc/sys",
            "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys",
            "! test -w /proc/sys/user/max_inotify_instances"},
           {"a masked file", "mount --bind /dev/null /proc/keys", "test ! -s /proc/keys"},
       }) {
    const std::string script =
        absl::StrCat(c.mask, " && ", c.proof, " && echo masked && exec \"$1\" run host /bin/true");
    RunResult result = RunOnHost({"/usr/bin/unshare", "--mount", "--propagation", "private", "sh",
                                  "-c", script, "sh", ZygoPath()});
    ASSERT_TRUE(absl::StrContains(result.out, "masked")) << c.name << ": " << result.err;
    if (c.mask == "true") {
      EXPECT_EQ(result.exit_code, 0) << c.name << ": " << result.err;
      continue;
    }
    EXPECT_EQ(result.exit_code, 125) << c.name;
    EXPECT_EQ(LineCount(result.err), 1) << c.name << ": " << result.err;
    EXPECT_TRUE(absl::StrContains(result.err, "cannot have a /proc of its own")) << result.err;
    EXPECT_TRUE(absl::StrContains(result.err, "systempaths=unconfined")) << result.err;
  }
  EXPECT_TRUE(LeftoverCgroups().empty());
}

TEST(RunCli, StreamsPassStraightThrough) {
  std::string input = std::string(getenv("TEST_TMPDIR")) + "/input.txt";
  std::ofstream(input) << "hello through stdin\n";
  RunOptions options;
  options.stdin_fd = open(input.c_str(), O_RDONLY);
  RunResult result = RunZygo({}, "host", {"/bin/sh", "-c", "cat; echo to-stderr >&2"}, options);
  close(options.stdin_fd);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "hello through stdin\n");
  EXPECT_EQ(result.err, "to-stderr\n");
}

TEST(RunCli, InsideLooksLikeTheSpecSays) {
  RunResult result = RunZygo({"-e", "GREETING=hi", "-w", "/tmp", "-u", "1000:1000"}, "host",
                             {"/bin/sh", "-c", "hostname; id -u; id -g; pwd; echo $GREETING"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "zygo\n1000\n1000\n/tmp\nhi\n");
  RunResult root = RunZygo({}, "host", {"/bin/sh", "-c", "echo x > /etc/zygo-test"});
  EXPECT_NE(root.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(root.err, "Read-only file system")) << root.err;
}

TEST(RunCli, DryRunJsonPrintsThePlanAndRunsNothing) {
  std::string marker = std::string(getenv("TEST_TMPDIR")) + "/dry-run-marker";
  RunResult result =
      RunZygo({"--dry-run", "--json", "-v", std::string(getenv("TEST_TMPDIR")) + ":/work"}, "host",
              {"/bin/touch", "/work/dry-run-marker"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  auto plan = nlohmann::json::parse(result.out);
  EXPECT_EQ(plan["namespaces"].size(), 7u);
  EXPECT_EQ(plan["cgroup"]["memory_bytes"], 256 << 20);
  EXPECT_EQ(plan["cgroup"]["pids_max"], 128);
  EXPECT_GT(plan["seccomp"]["allowed_syscalls"].get<int>(), 200);
  EXPECT_GT(plan["mounts"].size(), 20u);
  EXPECT_EQ(plan["network"], "loopback only");
}

TEST(RunCli, OutcomeHasEveryField) {
  RunResult result = RunZygo({}, "host", {"/bin/true"});
  ASSERT_EQ(result.exit_code, 0);
  auto outcome = nlohmann::json::parse(result.outcome_json);
  for (const char* key :
       {"status", "exit_code", "signal", "timed_out", "oom_killed", "peak_rss_kb", "cpu_user_ms",
        "cpu_sys_ms", "wall_ms", "timings", "limits", "cgroup_driver"}) {
    EXPECT_TRUE(outcome.contains(key)) << key;
  }
  EXPECT_EQ(outcome["status"], "ok");
  EXPECT_GT(outcome["peak_rss_kb"].get<int>(), 0);
  EXPECT_TRUE(outcome["timings"].contains("start_ms"));
  EXPECT_EQ(outcome["limits"]["pids"], 128);
  EXPECT_NE(outcome["cgroup_driver"], "none");
}

TEST(RunCli, VerbosePrintsTheTimingLine) {
  RunResult result = RunZygo({"--verbose"}, "host", {"/bin/true"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(absl::StartsWith(result.err, "timing: plan ")) << result.err;
  EXPECT_TRUE(absl::StrContains(result.err, " start ")) << result.err;
  EXPECT_TRUE(absl::StrContains(result.err, " run ")) << result.err;
}

TEST(RunCli, SigtermToZygoReachesTheCommand) {
  // The command traps TERM and exits 42: that exit code proves the forward arrived.
  std::thread sender([] {
    for (int i = 0; i < 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      for (int pid : ProcessesMatching("zygo-sigterm-marker")) {
        char buffer[4096] = {};
        FILE* f = fopen(("/proc/" + std::to_string(pid) + "/cmdline").c_str(), "r");
        if (f == nullptr) continue;
        fread(buffer, 1, sizeof(buffer) - 1, f);
        fclose(f);
        if (absl::EndsWith(buffer, "/zygo") && ProcessesMatching("20.0042").size() > 0) {
          kill(pid, SIGTERM);
          return;
        }
      }
    }
  });
  RunResult result = RunZygo({"--hostname", "zygo-sigterm-marker"}, "host",
                             {"/bin/sh", "-c", "trap 'exit 42' TERM; /bin/sleep 20.0042 & wait"});
  sender.join();
  EXPECT_EQ(result.exit_code, 42) << result.err;
}

TEST(RunCli, DirImageRunsAStaticBinary) {
  std::string image = std::string(getenv("TEST_TMPDIR")) + "/rootfs";
  for (const char* sub : {"/dev", "/proc", "/tmp", "/bin"}) {
    std::filesystem::create_directories(image + sub);
  }
  std::filesystem::copy_file(ProbePath(), image + "/bin/probe",
                             std::filesystem::copy_options::overwrite_existing);
  RunResult result = RunZygo({}, "dir:" + image, {"/bin/probe", "write-path", "/tmp"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Verdict(result, "write-path"), "allowed") << result.out;
  RunResult root = RunZygo({}, "dir:" + image, {"/bin/probe", "write-root"});
  EXPECT_TRUE(absl::StartsWith(Verdict(root, "write-root"), "denied")) << root.out;
  // The host's /usr is not in this image.
  RunResult usr = RunZygo({}, "dir:" + image, {"/bin/probe", "read-file", "/usr/bin/env"});
  EXPECT_EQ(Verdict(usr, "read-file"), "denied ENOENT") << usr.out;
}

// An ordinary user: no cgroup can be made without delegation, so zygo refuses and
// names --allow-unlimited; with it, the sandbox runs.
TEST(RunCli, RootlessRunsWithAllowUnlimited) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create the test user";
  std::string dir;
  absl::StatusOr<RunOptions> rootless = RootlessRunOptions({}, &dir);
  ASSERT_TRUE(rootless.ok()) << rootless.status();
  const RunOptions& options = *rootless;
  RunResult refused = RunZygo({}, "host", {"/bin/true"}, options);
  EXPECT_EQ(refused.exit_code, 125) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err, "--allow-unlimited")) << refused.err;
  RunResult ran = RunZygo({"--allow-unlimited"}, "host",
                          {"/bin/sh", "-c", "id -u; cat /proc/self/status | grep CapEff"}, options);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_TRUE(absl::StartsWith(ran.out, "0\nCapEff:\t0000000000000000")) << ran.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zygo::testing

namespace zygo::testing {
namespace {

// doctor probes for real: on this host (root, v1 hybrid, Landlock) everything is there,
// and its cgroup line must agree with what a run actually used.
TEST(RunCli, DoctorAgreesWithWhatARunUses) {
  RunResult doctor = RunOnHost({ZygoPath(), "doctor"});
  EXPECT_EQ(doctor.exit_code, 0) << doctor.out << doctor.err;
  RunResult run = RunZygo({}, "host", {"/bin/true"});
  std::string driver = OutcomeField(run, "cgroup_driver");  // "\"v1\""
  ASSERT_GE(driver.size(), 3u);
  EXPECT_TRUE(absl::StrContains(doctor.out, "cgroup " + driver.substr(1, driver.size() - 2)))
      << doctor.out;
  for (const char* line : {"user namespaces", "seccomp", "landlock", "images"}) {
    EXPECT_TRUE(absl::StrContains(doctor.out, line)) << line;
  }
}

}  // namespace
}  // namespace zygo::testing
