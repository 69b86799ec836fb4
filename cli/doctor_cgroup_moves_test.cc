// The "cgroup moves" decision over fake host facts, and --fix's prompt with fake actions:
// nothing here remounts anything (the remount action is always a fake that counts).
#include "cli/doctor_cgroup_moves.h"

#include <pty.h>
#include <sys/mount.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace zygo::cli {
namespace {

// A systemd host's cgroup2 line, as Debian 12 and Ubuntu 22.04+ mount it.
constexpr char kSystemdMountinfo[] =
    "22 27 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

// This machine's kind: a tmpfs at /sys/fs/cgroup with v1 hierarchies and a v2 beside them.
constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

CgroupMovesFacts SystemdHost() {
  CgroupMovesFacts facts;
  facts.kernel_release = "6.1.0-57-amd64";
  facts.cgroup2 = FindMount(kSystemdMountinfo, "/sys/fs/cgroup");
  facts.root = true;
  facts.systemd = true;
  return facts;
}

TEST(FindMount, ReadsBothOptionListsOfTheTopmostMount) {
  std::optional<MountEntry> mount = FindMount(kSystemdMountinfo, "/sys/fs/cgroup");
  ASSERT_TRUE(mount.has_value());
  EXPECT_EQ(mount->fs_type, "cgroup2");
  EXPECT_EQ(mount->mount_options,
            (std::vector<std::string>{"rw", "nosuid", "nodev", "noexec", "relatime"}));
  EXPECT_EQ(mount->super_options,
            (std::vector<std::string>{"rw", "nsdelegate", "memory_recursiveprot"}));
  // A mount stacked over another: the later line is the one that is seen.
  std::string stacked =
      std::string(kSystemdMountinfo) + "90 25 0:50 / /sys/fs/cgroup rw,relatime - tmpfs none rw\n";
  EXPECT_EQ(FindMount(stacked, "/sys/fs/cgroup")->fs_type, "tmpfs");
  EXPECT_EQ(FindMount(kHybridMountinfo, "/sys/fs/cgroup")->fs_type, "tmpfs");
  EXPECT_FALSE(FindMount(kHybridMountinfo, "/nowhere").has_value());
}

TEST(DecideCgroupMoves, NotApplicableWithoutCgroup2AtTheRoot) {
  CgroupMovesFacts facts = SystemdHost();
  std::optional<MountEntry> root = FindMount(kHybridMountinfo, "/sys/fs/cgroup");
  facts.cgroup2.reset();  // what ReadCgroupMovesFacts makes of a tmpfs root
  ASSERT_NE(root->fs_type, "cgroup2");
  CgroupMovesDecision decision = DecideCgroupMoves(facts);
  EXPECT_EQ(decision.state, CgroupMovesState::kNotCgroup2);
  EXPECT_FALSE(decision.fix.has_value());
  EXPECT_EQ(DescribeCgroupMoves(facts, decision).status, CheckStatus::kNotApplicable);
}

TEST(DecideCgroupMoves, CheapWhenOnOrBeforeLinux6) {
  CgroupMovesFacts on = SystemdHost();
  on.cgroup2->super_options.push_back("favordynmods");
  EXPECT_EQ(DecideCgroupMoves(on).state, CgroupMovesState::kOn);
  EXPECT_EQ(DescribeCgroupMoves(on, DecideCgroupMoves(on)).status, CheckStatus::kOk);
  CgroupMovesFacts old = SystemdHost();
  old.kernel_release = "5.10.0-28-amd64";
  EXPECT_EQ(DecideCgroupMoves(old).state, CgroupMovesState::kOldKernel);
  EXPECT_FALSE(DecideCgroupMoves(old).fix.has_value());
}

TEST(DecideCgroupMoves, RemountKeepsEveryOptionAndAddsFavordynmods) {
  CgroupMovesDecision decision = DecideCgroupMoves(SystemdHost());
  ASSERT_EQ(decision.state, CgroupMovesState::kOffFixable);
  ASSERT_TRUE(decision.fix.has_value());
  const RemountPlan& plan = *decision.fix;
  EXPECT_EQ(plan.mount_point, "/sys/fs/cgroup");
  // cgroup2's reconfigure clears what it is not given again, MS_REMOUNT the mount flags.
  EXPECT_EQ(plan.flags, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME);
  EXPECT_EQ(plan.data, "nsdelegate,memory_recursiveprot,favordynmods");
  EXPECT_EQ(plan.command,
            "mount -o remount,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot,"
            "favordynmods /sys/fs/cgroup");
  EXPECT_EQ(plan.fstab_line,
            "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,"
            "memory_recursiveprot,favordynmods 0 0");
  DoctorCheck check = DescribeCgroupMoves(SystemdHost(), decision);
  EXPECT_EQ(check.status, CheckStatus::kMissing);
  EXPECT_FALSE(check.needed);
  EXPECT_TRUE(absl::StrContains(check.fix, plan.command)) << check.fix;

  CgroupMovesFacts named = SystemdHost();
  named.fstab_names_cgroup = true;
  EXPECT_EQ(DecideCgroupMoves(named).fix->fstab_line, "");
}

TEST(DecideCgroupMoves, NeverOfferedInsideAContainerOrToAnOrdinaryUser) {
  CgroupMovesFacts container = SystemdHost();
  container.container = {"/run/.containerenv exists"};
  CgroupMovesDecision decision = DecideCgroupMoves(container);
  EXPECT_EQ(decision.state, CgroupMovesState::kOffInContainer);
  EXPECT_FALSE(decision.fix.has_value());
  DoctorCheck check = DescribeCgroupMoves(container, decision);
  EXPECT_TRUE(absl::StrContains(check.detail, "/run/.containerenv exists")) << check.detail;
  EXPECT_TRUE(absl::StrContains(check.fix, "on the host")) << check.fix;

  CgroupMovesFacts user = SystemdHost();
  user.root = false;
  EXPECT_EQ(DecideCgroupMoves(user).state, CgroupMovesState::kOffNeedsRoot);
  EXPECT_FALSE(DecideCgroupMoves(user).fix.has_value());
}

TEST(ContainerSigns, EachSignAloneAndNoneOnAPlainHost) {
  ContainerProbe host;
  host.pid1_environ = std::string("HOME=/\0TERM=linux\0", 18);
  host.pid1_cgroup = "0::/init.scope\n";
  host.self_cgroup_ns = host.pid1_cgroup_ns = "cgroup:[4026531835]";
  host.detect_virt = "none\n";
  EXPECT_TRUE(ContainerSigns(host).empty());

  auto one = [&](auto change) {
    ContainerProbe probe = host;
    change(probe);
    return ContainerSigns(probe);
  };
  EXPECT_EQ(one([](ContainerProbe& p) { p.dockerenv = true; }).size(), 1u);
  EXPECT_EQ(one([](ContainerProbe& p) { p.containerenv = true; }).size(), 1u);
  EXPECT_EQ(one([](ContainerProbe& p) { p.run_systemd_container = "systemd-nspawn\n"; }).size(),
            1u);
  EXPECT_EQ(one([](ContainerProbe& p) { p.pid1_environ += std::string("container=lxc\0", 14); }),
            (std::vector<std::string>{"PID 1's environment has container=lxc"}));
  EXPECT_EQ(one([](ContainerProbe& p) { p.pid1_cgroup_ns = "cgroup:[4026532001]"; }).size(), 1u);
  EXPECT_EQ(
      one([](ContainerProbe& p) { p.pid1_cgroup = "0::/system.slice/docker-ab12.scope\n"; }).size(),
      1u);
  EXPECT_EQ(one([](ContainerProbe& p) { p.detect_virt = "podman\n"; }),
            (std::vector<std::string>{"systemd-detect-virt -c says podman"}));
  // PID 1's namespace unreadable (an ordinary user): no sign either way.
  EXPECT_TRUE(one([](ContainerProbe& p) { p.pid1_cgroup_ns = ""; }).empty());
}

// Fake actions that count, with the answer written into a pipe (or a pty) beforehand.
struct FakeFix {
  int remounts = 0;
  int appends = 0;
  std::string appended;
  absl::Status remount_result = absl::OkStatus();
  FILE* prompt = tmpfile();

  FixActions Actions(int answer_fd, bool terminal) {
    FixActions actions;
    actions.answer_fd = answer_fd;
    actions.prompt = prompt;
    actions.is_terminal = [terminal](int) { return terminal; };
    actions.remount = [this](const RemountPlan&) {
      ++remounts;
      return remount_result;
    };
    actions.append_fstab = [this](const std::string& line) {
      ++appends;
      appended = line;
      return absl::OkStatus();
    };
    return actions;
  }
  ~FakeFix() { fclose(prompt); }
};

// A pipe whose read end yields `answer` then EOF.
int AnswerPipe(const std::string& answer) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
  close(fds[1]);
  return fds[0];
}

RemountPlan Plan() { return *DecideCgroupMoves(SystemdHost()).fix; }

TEST(OfferRemount, WithoutATerminalItAsksNothingAndDoesNothing) {
  FakeFix fake;
  int answer = AnswerPipe("y\n");  // even a "y" waiting on stdin is not an answer
  std::string done = OfferRemount(Plan(), true, fake.Actions(answer, false));
  close(answer);
  EXPECT_EQ(fake.remounts, 0);
  EXPECT_EQ(fake.appends, 0);
  EXPECT_TRUE(absl::StrContains(done, "no terminal")) << done;
  EXPECT_TRUE(absl::StrContains(done, Plan().command)) << done;
  EXPECT_EQ(ftell(fake.prompt), 0) << "nothing may be asked without a terminal";
}

TEST(OfferRemount, TheRealTerminalTestRefusesAPipe) {
  // The real is_terminal on what a test (or cron, or CI) gives zygo: no prompt, no remount.
  FakeFix fake;
  FixActions actions = fake.Actions(AnswerPipe("y\n"), true);
  actions.is_terminal = RealFixActions().is_terminal;
  std::string done = OfferRemount(Plan(), true, actions);
  close(actions.answer_fd);
  EXPECT_EQ(fake.remounts, 0);
  EXPECT_TRUE(absl::StrContains(done, "no terminal")) << done;
}

TEST(OfferRemount, OnlyYesRemountsAndKeepsItAtBoot) {
  for (const char* answer : {"n\n", "\n", "", "yess\n", "no\n"}) {
    FakeFix fake;
    int fd = AnswerPipe(answer);
    std::string done = OfferRemount(Plan(), true, fake.Actions(fd, true));
    close(fd);
    EXPECT_EQ(fake.remounts, 0) << "answer '" << answer << "'";
    EXPECT_TRUE(absl::StrContains(done, "not remounted")) << done;
    EXPECT_GT(ftell(fake.prompt), 0) << "a terminal is asked";
  }
  for (const char* answer : {"y\n", "Y\n", " yes \n"}) {
    FakeFix fake;
    int fd = AnswerPipe(answer);
    std::string done = OfferRemount(Plan(), true, fake.Actions(fd, true));
    close(fd);
    EXPECT_EQ(fake.remounts, 1) << "answer '" << answer << "'";
    EXPECT_EQ(fake.appends, 1);
    EXPECT_EQ(fake.appended, Plan().fstab_line);
    EXPECT_TRUE(absl::StrContains(done, "keeps it at every boot")) << done;
  }
}

TEST(OfferRemount, FstabOnlyOnSystemdAndOnlyWhenItDoesNotNameTheMount) {
  FakeFix no_systemd;
  int fd = AnswerPipe("y\n");
  std::string done = OfferRemount(Plan(), false, no_systemd.Actions(fd, true));
  close(fd);
  EXPECT_EQ(no_systemd.remounts, 1);
  EXPECT_EQ(no_systemd.appends, 0);
  EXPECT_TRUE(absl::StrContains(done, "until the next boot")) << done;

  FakeFix named;
  RemountPlan plan = Plan();
  plan.fstab_line.clear();
  fd = AnswerPipe("y\n");
  done = OfferRemount(plan, true, named.Actions(fd, true));
  close(fd);
  EXPECT_EQ(named.appends, 0);
  EXPECT_TRUE(absl::StrContains(done, "already names")) << done;
}

TEST(OfferRemount, AFailedRemountTouchesNoFstab) {
  FakeFix fake;
  fake.remount_result = absl::PermissionDeniedError("mount(/sys/fs/cgroup): EPERM");
  int fd = AnswerPipe("y\n");
  std::string done = OfferRemount(Plan(), true, fake.Actions(fd, true));
  close(fd);
  EXPECT_EQ(fake.remounts, 1);
  EXPECT_EQ(fake.appends, 0);
  EXPECT_TRUE(absl::StrContains(done, "EPERM")) << done;
}

TEST(OfferRemount, AskedOnARealTerminal) {
  // A pty is a terminal to the real isatty: the answer typed there is read.
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  ASSERT_EQ(write(master, "y\n", 2), 2);
  FakeFix fake;
  FixActions actions = fake.Actions(slave, true);
  actions.is_terminal = RealFixActions().is_terminal;
  std::string done = OfferRemount(Plan(), true, actions);
  close(master);
  close(slave);
  EXPECT_EQ(fake.remounts, 1) << done;
}

}  // namespace
}  // namespace zygo::cli
