// The real `zygo doctor` on this host: text and --json say the same, the exit code follows
// the needed checks, and each verdict agrees with the same thing attempted by the test
// itself (unshare, a Landlock ruleset, an overlay mount, a tap device) or by `zygo run`
// (a plain run, --net full and egress, a run inside a sandbox, a rootless run). Controls:
// doctor run inside a zygo sandbox, where runs fail, must say so, and so must a rootless
// doctor where a rootless run gets no cgroup.
#include <fcntl.h>
#include <linux/landlock.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kIds = {"kernel",  "running_as",   "user_namespaces", "limits",
                                       "seccomp", "landlock",     "sandbox",         "overlayfs",
                                       "tun",     "nftables",     "pasta",           "cgroup_moves",
                                       "images",  "stale_cgroups"};

RunResult Doctor(std::vector<std::string> args, RunOptions options = {}) {
  std::vector<std::string> argv = {options.zygo_binary.empty() ? ZygoPath() : options.zygo_binary,
                                   "doctor"};
  argv.insert(argv.end(), args.begin(), args.end());
  options.want_outcome = false;
  return RunOnHost(argv, options);
}

json DoctorJson(std::vector<std::string> args = {}, RunOptions options = {}) {
  args.insert(args.begin(), "--json");
  RunResult result = Doctor(args, options);
  json doc = json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << result.out << result.err;
  if (doc.is_discarded()) return json::object();
  EXPECT_EQ(doc.value("exit_code", -1), result.exit_code) << result.out;
  return doc;
}

json Check(const json& doc, const std::string& id) {
  for (const json& check : doc.value("checks", json::array())) {
    if (check.value("id", "") == id) return check;
  }
  ADD_FAILURE() << "no check " << id << " in " << doc.dump();
  return json::object();
}

bool Ok(const json& doc, const std::string& id) {
  return Check(doc, id).value("status", "") == "ok";
}

// One line of text output: label (16 columns), status, detail.
struct Line {
  std::string label, status;
};
std::vector<Line> TextLines(const std::string& out) {
  std::vector<Line> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (line.size() < 18) continue;
    std::string label(absl::StripTrailingAsciiWhitespace(line.substr(0, 16)));
    absl::string_view rest = line.substr(17);
    lines.push_back({label, std::string(rest.substr(0, rest.find(' ')))});
  }
  return lines;
}

TEST(Doctor, TextAndJsonSayTheSameAndTheExitFollowsTheNeededChecks) {
  RunResult text = Doctor({});
  json doc = DoctorJson();
  ASSERT_TRUE(doc.contains("checks")) << doc.dump();
  EXPECT_EQ(doc["schema"], 1);
  std::vector<std::string> ids;
  bool can_work = true;
  for (const json& check : doc["checks"]) {
    ids.push_back(check.value("id", ""));
    for (const char* key : {"id", "label", "status", "needed_for", "detail", "fix"}) {
      EXPECT_TRUE(check.contains(key) && check[key].is_string()) << key << " in " << check.dump();
    }
    EXPECT_TRUE(check["needed"].is_boolean() && check["facts"].is_object() &&
                check["ms"].is_number())
        << check.dump();
    const std::string status = check["status"];
    EXPECT_TRUE(status == "ok" || status == "missing" || status == "not_applicable") << status;
    // A missing line always says what to do.
    EXPECT_EQ(status == "missing", !check["fix"].get<std::string>().empty()) << check.dump();
    if (check["needed"].get<bool>() && status != "ok") can_work = false;
  }
  EXPECT_EQ(ids, kIds);
  EXPECT_EQ(doc["zygo_run_can_work"], can_work);
  EXPECT_EQ(text.exit_code, can_work ? 0 : 1) << text.out;
  // The needed ones are the ones --help calls needed.
  std::set<std::string> needed;
  for (const json& check : doc["checks"]) {
    if (check["needed"].get<bool>()) needed.insert(check["id"]);
  }
  EXPECT_EQ(needed, (std::set<std::string>{"user_namespaces", "limits", "seccomp", "sandbox"}));

  std::vector<Line> lines = TextLines(text.out);
  ASSERT_EQ(lines.size(), doc["checks"].size()) << text.out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& check = doc["checks"][i];
    EXPECT_EQ(lines[i].label, check["label"]) << text.out;
    const std::string want = check["status"] == "ok"        ? "ok"
                             : check["status"] == "missing" ? "MISSING"
                                                            : "n/a";
    EXPECT_EQ(lines[i].status, want) << lines[i].label;
  }
}

// What every run needs, against a run: the same verdict, the same cgroup driver.
TEST(Doctor, AgreesWithARun) {
  json doc = DoctorJson();
  RunResult run = RunZygo({}, "host", {"/bin/true"});
  EXPECT_EQ(run.exit_code == 0, doc["exit_code"] == 0) << run.err << doc.dump(2);
  EXPECT_EQ(run.exit_code == 0, Ok(doc, "sandbox")) << run.err;
  EXPECT_EQ(run.exit_code == 0, Ok(doc, "limits")) << run.err;
  if (Ok(doc, "limits")) {
    EXPECT_EQ(OutcomeField(run, "cgroup_driver"),
              "\"" + Check(doc, "limits")["facts"].value("driver", "") + "\"");
    // And where: the placement the run's outcome names is the one doctor tried.
    EXPECT_EQ(OutcomeField(run, "cgroup_placement"),
              "\"" + Check(doc, "limits")["facts"].value("placement", "") + "\"");
    EXPECT_EQ(OutcomeField(run, "limits_applied"), "true");
  }
  json unlimited = DoctorJson({"--allow-unlimited"});
  EXPECT_FALSE(Check(unlimited, "limits")["needed"].get<bool>());
  RunResult unlimited_run = RunZygo({"--allow-unlimited"}, "host", {"/bin/true"});
  EXPECT_EQ(unlimited_run.exit_code == 0, unlimited["exit_code"] == 0) << unlimited_run.err;
}

TEST(Doctor, UserNamespacesAgreeWithUnshare) {
  RunResult unshare = RunOnHost({"/usr/bin/unshare", "--user", "--map-root-user", "--pid", "--fork",
                                 "--mount", "--net", "--ipc", "--uts", "--cgroup", "/bin/true"});
  EXPECT_EQ(unshare.exit_code == 0, Ok(DoctorJson(), "user_namespaces")) << unshare.err;
}

// The sandbox refuses a new user namespace (seccomp), the host does not.
TEST(Doctor, SeccompAgreesWithASandboxRefusingUnshare) {
  RunResult host = RunOnHost({"/usr/bin/unshare", "--user", "/bin/true"});
  ASSERT_EQ(host.exit_code, 0) << "control: unshare --user on the host: " << host.err;
  RunResult sandboxed = RunZygo({}, "host", {"/usr/bin/unshare", "--user", "/bin/true"});
  const bool refused =
      sandboxed.exit_code != 0 && absl::StrContains(sandboxed.err, "Operation not permitted");
  EXPECT_EQ(refused, Ok(DoctorJson(), "seccomp")) << sandboxed.err;
}

// The test's own ruleset: a write to /proc/self/comm refused.
bool LandlockRefusesAWrite() {
  pid_t pid = fork();
  if (pid == 0) {
    struct landlock_ruleset_attr attr = {};
    attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE;
    int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
    if (ruleset < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
      _exit(2);
    }
    int fd = open("/proc/self/comm", O_WRONLY);
    _exit(fd < 0 && errno == EACCES ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(Doctor, LandlockAgreesWithTheTestsOwnRuleset) {
  int fd = open("/proc/self/comm", O_WRONLY);
  ASSERT_GE(fd, 0) << "control: without a ruleset the write is allowed";
  close(fd);
  json doc = DoctorJson();
  EXPECT_EQ(LandlockRefusesAWrite(), Ok(doc, "landlock"));
  int abi = static_cast<int>(
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION));
  EXPECT_EQ(Check(doc, "landlock")["facts"].value("abi", -1), abi < 0 ? 0 : abi);
}

TEST(Doctor, OverlayfsAgreesWithAnOverlayMountedByHand) {
  const char* script =
      "mount -t tmpfs t /tmp && mkdir /tmp/l /tmp/u /tmp/w /tmp/m && touch /tmp/l/f && "
      "{ mount -t overlay o -o lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w /tmp/m || "
      "mount -t overlay o -o lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr /tmp/m; } "
      "&& echo x >> /tmp/m/f && test -e /tmp/u/f";
  RunResult by_hand = RunOnHost(
      {"/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", script});
  EXPECT_EQ(by_hand.exit_code == 0, Ok(DoctorJson(), "overlayfs")) << by_hand.err;
}

// The network lines against the runs that need them, and the tap device made by hand.
TEST(Doctor, NetworkLinesAgreeWithNetRuns) {
  json doc = DoctorJson();
  const bool all = Ok(doc, "tun") && Ok(doc, "nftables") && Ok(doc, "pasta");
  RunResult full = RunZygo({"--net", "full"}, "host", {"/bin/true"});
  EXPECT_EQ(full.exit_code == 0, all) << full.err << doc.dump(2);
  RunResult egress =
      RunZygo({"--net", "egress", "--allow", "example.com:443"}, "host", {"/bin/true"});
  EXPECT_EQ(egress.exit_code == 0, all) << egress.err;
  // Control: a pasta that cannot start (ZYGO_PASTA, which runs honour too) fails both the
  // line and the run, and leaves the firewall line as it was.
  for (const char* pasta : {"/no/such/pasta", "/bin/false"}) {
    RunOptions broken;
    broken.env = {std::string("ZYGO_PASTA=") + pasta};
    json without = DoctorJson({}, broken);
    EXPECT_EQ(Check(without, "pasta")["status"], "missing") << pasta << without.dump(2);
    EXPECT_EQ(Ok(without, "nftables"), Ok(doc, "nftables"));
    EXPECT_EQ(without["exit_code"], doc["exit_code"]) << "pasta is not needed by every run";
    EXPECT_NE(RunZygo({"--net", "full"}, "host", {"/bin/true"}, broken).exit_code, 0) << pasta;
  }
  if (access("/usr/sbin/ip", X_OK) == 0) {
    RunResult tap = RunOnHost({"/usr/bin/unshare", "--user", "--map-root-user", "--net",
                               "/usr/sbin/ip", "tuntap", "add", "dev", "zt0", "mode", "tap"});
    EXPECT_EQ(tap.exit_code == 0, Ok(doc, "tun")) << tap.err;
  }
}

TEST(Doctor, CgroupMovesFollowTheMountTable) {
  std::ifstream file("/proc/self/mountinfo");
  std::string line, type, options;
  while (std::getline(file, line)) {
    std::vector<std::string> halves = absl::StrSplit(line, absl::MaxSplits(" - ", 1));
    std::vector<std::string> left = absl::StrSplit(halves[0], ' ');
    if (halves.size() != 2 || left.size() < 5 || left[4] != "/sys/fs/cgroup") continue;
    std::vector<std::string> right = absl::StrSplit(halves[1], ' ');
    type = right[0];
    options = right.size() > 2 ? right[2] : "";
  }
  json check = Check(DoctorJson(), "cgroup_moves");
  if (type != "cgroup2") {
    EXPECT_EQ(check["status"], "not_applicable") << check.dump();
  } else {
    EXPECT_EQ(check["facts"]["favordynmods"].get<bool>(),
              absl::StrContains(options, "favordynmods"));
  }
}

// --fix from a test (no terminal): nothing is asked; on a cgroup2 host without favordynmods
// the line says what it would run, and the mount table is the same afterwards.
TEST(Doctor, FixWithoutATerminalAsksNothing) {
  std::ifstream before_file("/proc/self/mountinfo");
  std::stringstream before;
  before << before_file.rdbuf();
  RunResult fixed = Doctor({"--fix"});
  json doc = DoctorJson({"--fix"});
  EXPECT_FALSE(absl::StrContains(fixed.err, "[y/N]")) << fixed.err;
  EXPECT_EQ(fixed.exit_code, doc["exit_code"].get<int>());
  json moves = Check(doc, "cgroup_moves");
  if (!moves["facts"].value("remount_command", "").empty()) {
    EXPECT_TRUE(absl::StrContains(moves["detail"].get<std::string>(), "no terminal"))
        << moves.dump();
  }
  std::ifstream after_file("/proc/self/mountinfo");
  std::stringstream after;
  after << after_file.rdbuf();
  EXPECT_EQ(before.str(), after.str());
}

// Everything doctor made is gone when it exits: its cgroups, mounts, helpers and pasta.
TEST(Doctor, LeavesNothingBehind) {
  RunOptions options;
  options.env = {"ZYGO_DOCTOR_TEST_MARK=leaves-nothing"};
  json doc = DoctorJson({}, options);
  const json paths = Check(doc, "limits")["facts"].value("paths", json::array());
  // Control: the attempt made cgroups (named in the facts), so their absence means something.
  EXPECT_EQ(paths.empty(), !Ok(doc, "limits")) << doc.dump(2);
  for (const json& path : paths) EXPECT_FALSE(fs::exists(path.get<std::string>())) << path;
  EXPECT_TRUE(LeftoverCgroups().empty());
  // Doctor's own cgroups are named apart (zygo-doctor-PID-N): none of them may be left.
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           "/sys/fs/cgroup", fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() > 6) it.disable_recursion_pending();
    EXPECT_FALSE(absl::StartsWith(it->path().filename().string(), "zygo-doctor-")) << it->path();
  }
  EXPECT_TRUE(LeftoverMounts().empty());
  // zygo-net and pasta inherit doctor's environment: none of them may still run.
  EXPECT_TRUE(ProcessesMatching("ZYGO_DOCTOR_TEST_MARK=leaves-nothing").empty());
  EXPECT_EQ(Check(doc, "stale_cgroups")["facts"].value("found", -1), 0);
}

TEST(Doctor, TakesWellUnderASecond) {
  double best_ms = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    RunResult result = Doctor({});
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.exit_code, 0) << result.out;
    best_ms = std::min(best_ms, ms);
  }
  std::cout << "zygo doctor: best of 3 " << best_ms << " ms\n";
  EXPECT_LT(best_ms, 1000);
}

TEST(Doctor, BadArgumentsAndHelp) {
  RunResult bad = Doctor({"--bogus"});
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_EQ(LineCount(bad.err), 1) << bad.err;
  RunResult help = Doctor({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* part : {"Needed by every run", "Optional layers", "--json", "--fix",
                           "never offered inside a container"}) {
    EXPECT_TRUE(absl::StrContains(help.out, part)) << part;
  }
}

// Control: inside a zygo sandbox (seccomp refuses namespaces and clone3, no cgroup tree),
// a run cannot start; doctor there must say so, and exit 1.
TEST(Doctor, InsideASandboxItSaysWhatARunThereGets) {
  std::string dir = "/tmp/zygo-doctor-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  fs::copy_file(ZygoPath(), dir + "/zygo");
  RunOptions options;
  options.want_outcome = false;
  RunResult run =
      RunZygo({"-v", dir + ":/zd:ro"}, "host", {"/zd/zygo", "run", "host", "/bin/true"}, options);
  RunResult doctor =
      RunZygo({"-v", dir + ":/zd:ro"}, "host", {"/zd/zygo", "doctor", "--json"}, options);
  fs::remove_all(dir);
  EXPECT_EQ(run.exit_code, 125) << run.err;
  EXPECT_EQ(doctor.exit_code, 1) << doctor.out << doctor.err;
  json doc = json::parse(doctor.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << doctor.out;
  EXPECT_FALSE(doc["zygo_run_can_work"].get<bool>());
  EXPECT_EQ(Check(doc, "user_namespaces")["status"], "missing");
  EXPECT_EQ(Check(doc, "sandbox")["status"], "missing");
}

// An ordinary user: on a host where rootless runs get no cgroup (v1, no delegation), doctor
// says limits are missing exactly when a rootless run refuses; with --allow-unlimited both
// work or both fail, and its network lines agree with a rootless --net full run.
TEST(Doctor, RootlessAgreesWithARootlessRun) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create the test user";
  std::string dir;
  absl::StatusOr<RunOptions> rootless = RootlessRunOptions({"net/zygo-net"}, &dir);
  ASSERT_TRUE(rootless.ok()) << rootless.status();
  const RunOptions& options = *rootless;
  json doc = DoctorJson({}, options);
  RunResult run = RunZygo({}, "host", {"/bin/true"}, options);
  EXPECT_EQ(Ok(doc, "limits"), run.exit_code == 0) << run.err << doc.dump(2);
  EXPECT_EQ(doc["exit_code"] == 0, run.exit_code == 0) << run.err;
  EXPECT_EQ(Check(doc, "running_as")["facts"].value("root", true), false);
  json unlimited = DoctorJson({"--allow-unlimited"}, options);
  RunResult unlimited_run = RunZygo({"--allow-unlimited"}, "host", {"/bin/true"}, options);
  EXPECT_EQ(unlimited["exit_code"] == 0, unlimited_run.exit_code == 0) << unlimited_run.err;
  RunResult net = RunZygo({"--allow-unlimited", "--net", "full"}, "host", {"/bin/true"}, options);
  EXPECT_EQ(Ok(unlimited, "tun") && Ok(unlimited, "nftables") && Ok(unlimited, "pasta"),
            net.exit_code == 0)
      << net.err << unlimited.dump(2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zygo::testing
