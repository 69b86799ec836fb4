// What the kernel counts per user or for the whole host rather than per namespace, and the
// root-only /proc files: a sandbox's root is the host's root when zygo runs as root, so a
// sandbox must not take host root's budget, nor read what only host root may read.
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

// The INFO count=N line of inotify-hold.
int HeldCount(const RunResult& result) {
  size_t at = result.out.find("INFO count=");
  return at == std::string::npos ? -1 : atoi(result.out.c_str() + at + 11);
}

bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 400; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// Runs `run` on a thread with a pipe as its stdin; once `ready` exists, calls `while_held`,
// then closes the pipe, which lets the probe release what it holds.
RunResult HoldWhile(const std::function<RunResult(const RunOptions&)>& run,
                    const std::string& ready, const std::function<void()>& while_held) {
  int pipe_fds[2];
  EXPECT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  RunOptions options;
  options.stdin_fd = pipe_fds[0];
  RunResult result;
  std::thread holder([&] { result = run(options); });
  bool held = WaitForFile(ready);
  EXPECT_TRUE(held) << "the probe never said it holds its instances";
  if (held) while_held();
  close(pipe_fds[1]);
  holder.join();
  close(pipe_fds[0]);
  return result;
}

class HostResources : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the sandbox's root is the host's only when run as root";
    dir_ = "/tmp/zygo-hostres-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    chmod(dir_.c_str(), 0777);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // A copy of the probe nobody can run (the built one sits under /root in Bazel's cache),
  // and the options that run a host control as nobody.
  std::string ProbeForNobody() {
    const std::string probe = dir_ + "/probe";
    if (!std::filesystem::exists(probe)) std::filesystem::copy_file(ProbePath(), probe);
    chmod(probe.c_str(), 0755);
    return probe;
  }
  static RunOptions AsNobody() {
    RunOptions options;
    options.as_uid = 65534;
    options.as_gid = 65534;
    options.want_outcome = false;
    return options;
  }
  std::string dir_;
};

// Inotify instances are counted per user, in every ancestor user namespace too: without a
// limit of its own a sandbox takes all of host root's (128 on Debian), and then the host's
// own inotify_init1 (systemd, journald) fails with EMFILE.
TEST_F(HostResources, ASandboxHoldingEveryInotifyInstanceItCanLeavesHostRootSome) {
  // Control: where only the kernel's per-user limit stops it (as nobody on the host), the
  // probe takes that user's whole budget: a second one gets none.
  const std::string probe = ProbeForNobody();
  const RunOptions as_nobody = AsNobody();
  RunResult second;
  RunResult control = HoldWhile(
      [&](const RunOptions& options) {
        RunOptions o = as_nobody;
        o.stdin_fd = options.stdin_fd;
        return RunOnHost({probe, "inotify-hold", "100000", dir_ + "/control-ready"}, o);
      },
      dir_ + "/control-ready",
      [&] {
        second = RunOnHost({probe, "inotify-hold", "1"}, as_nobody);
      });
  ASSERT_EQ(Verdict(control, "inotify-hold"), "denied EMFILE") << control.out << control.err;
  ASSERT_EQ(Verdict(second, "inotify-hold"), "denied EMFILE") << second.out;
  // Attempt: inside, the probe stops at the sandbox's own limit, and host root can still
  // make instances while the sandbox holds all of its own.
  int host_fd = -1;
  RunResult attempt = HoldWhile(
      [&](const RunOptions& options) {
        return RunProbe({"inotify-hold", "100000", "/vol/ready"}, {"-v", dir_ + ":/vol:rw"},
                        options);
      },
      dir_ + "/ready", [&] { host_fd = inotify_init1(IN_CLOEXEC); });
  EXPECT_EQ(Verdict(attempt, "inotify-hold"), "denied EMFILE") << attempt.out << attempt.err;
  EXPECT_GT(HeldCount(attempt), 0) << attempt.out;
  EXPECT_LT(HeldCount(attempt), HeldCount(control)) << attempt.out;
  EXPECT_GE(host_fd, 0) << "host root's inotify_init1 failed: " << strerror(errno);
  if (host_fd >= 0) close(host_fd);
}

// Watches, queued signals and message-queue bytes are counted per user too; a sandbox gets a share of its own.
// Controls: as nobody on the host, the same probes get past that share.
TEST_F(HostResources, InotifyWatchesQueuedSignalsAndMessageQueuesStopAtTheSandboxsShare) {
  const std::string probe = ProbeForNobody();
  const RunOptions as_nobody = AsNobody();
  RunResult watches_control = RunOnHost({probe, "inotify-watches", dir_, "10000"}, as_nobody);
  ASSERT_EQ(Verdict(watches_control, "inotify-watches"), "allowed") << watches_control.out;
  RunResult watches = RunProbe({"inotify-watches", "/tmp", "10000"});
  EXPECT_EQ(Verdict(watches, "inotify-watches"), "denied ENOSPC") << watches.out << watches.err;
  EXPECT_EQ(HeldCount(watches), 8192) << watches.out;
  RunResult signals_control = RunOnHost({probe, "sigqueue-hold", "5000"}, as_nobody);
  ASSERT_EQ(Verdict(signals_control, "sigqueue-hold"), "allowed") << signals_control.out;
  RunResult signals = RunProbe({"sigqueue-hold", "5000"});
  EXPECT_EQ(Verdict(signals, "sigqueue-hold"), "denied EAGAIN") << signals.out << signals.err;
  EXPECT_LE(HeldCount(signals), 1024) << signals.out;
  // POSIX message queues: Landlock refuses making one (EACCES: the queue is a file of the
  // mqueue filesystem, beneath no rule); without Landlock, 10 messages of 8 KiB are past the
  // sandbox's 64 KiB of queue bytes (EMFILE).
  RunResult queue_control = RunOnHost({probe, "mqueue-open", "10"}, as_nobody);
  ASSERT_EQ(Verdict(queue_control, "mqueue-open"), "allowed") << queue_control.out;
  RunResult queue = RunProbe({"mqueue-open", "10"});
  const std::string verdict = Verdict(queue, "mqueue-open");
  EXPECT_TRUE(verdict == "denied EACCES" || verdict == "denied EMFILE") << queue.out << queue.err;
}

// Every file directly under /proc that only root may read shows the host's physical memory
// layout or kernel allocations (kpageflags, slabinfo, ...): inside, each reads empty.
TEST_F(HostResources, RootOnlyProcFilesReadEmpty) {
  std::vector<std::string> root_only;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    struct stat st {};
    if (lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if ((st.st_mode & S_IROTH) == 0) root_only.push_back(entry.path());
  }
  ASSERT_FALSE(root_only.empty());
  int shown_on_host = 0;  // files the control read bytes of: the attempts that mean something
  for (const std::string& path : root_only) {
    // Reading the kernel log consumes it (the host's syslog would miss it): not even the
    // control reads it. Inside, the mask is checked like every other.
    if (path != "/proc/kmsg") {
      RunResult control = RunProbeOnHost({"read-masked", path});
      if (Verdict(control, "read-masked") != "allowed") continue;  // empty on this host too
      ++shown_on_host;
    }
    RunResult attempt = RunProbe({"read-masked", path});
    EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "read-masked"), "denied"))
        << path << attempt.out << attempt.err;
  }
  // slabinfo and vmallocinfo have bytes on every kernel.
  EXPECT_GE(shown_on_host, 2) << "the control read almost nothing: the masks were not tried";
}

// A caller whose hard RLIMIT_NOFILE is below what a sandbox asks for (4096) still runs
// sandboxes: the limits are lowered to what the caller may grant.
TEST(Rlimits, ALowHardLimitOfTheCallerIsNotAFailure) {
  RunOptions options;
  options.want_outcome = false;
  RunResult low = RunOnHost({"/usr/bin/prlimit", "--nofile=512:512", ZygoPath(), "run", "host",
                             "/bin/sh", "-c", "ulimit -Hn"},
                            options);
  EXPECT_EQ(low.exit_code, 0) << low.err;
  EXPECT_EQ(low.out, "512\n") << low.err;
  // Control: an ordinary caller gets the sandbox's own hard limit.
  RunResult ordinary = RunZygo({}, "host", {"/bin/sh", "-c", "ulimit -Hn"});
  EXPECT_EQ(ordinary.out, "4096\n") << ordinary.err;
}

}  // namespace
}  // namespace zygo::testing
