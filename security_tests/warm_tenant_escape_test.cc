// Another function's data, from inside a warm function: its spec's [env], its events and
// its replies are in the supervisor's memory, and a sandbox's pid 1 used to be a fork of
// the supervisor that never exec'd, readable through /proc/1/mem by the function's own
// import-time code and by every request. Now pid 1 is zygo-init: a Python function (at
// import time and per request) and a warm-exec function scan every process they can see,
// and find nothing; read from outside as root, no process of their sandboxes holds any of
// it, while the supervisor's own memory does (the control).
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/sys/fs.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security_tests/process_memory.h"
#include "security_tests/supervisor_options.h"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kVictimHandler[] = R"(def main(event):
    return {'reply': event['secret'][::-1]}
)";

// Run twice: every function in a sandbox of its own, and Python functions forked from a
// runtime zygote they share (the zygote tree), where the victim's zygote and the attacker's
// are forks of one process.
class WarmTenantEscapeTest : public WarmSuiteBothLayouts {
 protected:
  void SetUp() override {
    WarmSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    fs::create_directories(dir_ + "/victim");
    fs::create_directories(dir_ + "/attacker");
    WriteFile("victim/victim.py", kVictimHandler);
    fs::copy_file(Runfile("security_tests/testcases/tenant_scan.py"),
                  dir_ + "/attacker/tenant_scan.py");
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.env.push_back(absl::StrCat("ZYGO_WARM_TENANT_TEST_MARKER=", dir_, "/"));
    StartSupervisor(options);
  }

  // The processes of the sandbox whose pid 1 is zygo-init with `entry` on its command line,
  // from one scan of /proc.
  std::vector<pid_t> SandboxOf(const std::string& entry) {
    const ProcessParents parents = ReadProcessParents();
    std::vector<pid_t> found;
    for (pid_t pid : DescendantsIn(parents, supervisor_->pid())) {
      const std::string cmdline = ReadProcFile(absl::StrCat("/proc/", pid, "/cmdline"));
      if (std::string(cmdline.c_str()) != "zygo-init" || !absl::StrContains(cmdline, entry)) {
        continue;
      }
      found.push_back(pid);
      for (pid_t inside : DescendantsIn(parents, pid)) found.push_back(inside);
    }
    return found;
  }

  // The processes of the function zygote forked from a runtime zygote whose /code holds
  // `file` (pid 1 of a pid namespace two below ours), and every process below it.
  std::vector<pid_t> ForkedZygoteOf(const std::string& file) {
    const ProcessParents parents = ReadProcessParents();
    std::vector<pid_t> found;
    for (pid_t pid : DescendantsIn(parents, supervisor_->pid())) {
      absl::StatusOr<std::vector<pid_t>> levels = base::sys::ReadNamespacePids(pid);
      if (!levels.ok() || levels->size() != 3 || levels->back() != 1) continue;
      if (!fs::exists(absl::StrCat("/proc/", pid, "/root/code/", file))) continue;
      found.push_back(pid);
      for (pid_t inside : DescendantsIn(parents, pid)) found.push_back(inside);
    }
    return found;
  }

  // Every runtime zygote's sandbox: its init (a child of the supervisor) whose agent runs
  // --runtime, and the agent, but none of the function zygotes it forked.
  std::vector<pid_t> RuntimeSandboxes() {
    const ProcessParents parents = ReadProcessParents();
    std::vector<pid_t> found;
    for (pid_t pid : DescendantsIn(parents, supervisor_->pid())) {
      const std::string cmdline = ReadProcFile(absl::StrCat("/proc/", pid, "/cmdline"));
      absl::StatusOr<std::vector<pid_t>> levels = base::sys::ReadNamespacePids(pid);
      // One pid namespace below ours: the runtime's own; its forks are one deeper.
      if (levels.ok() && levels->size() == 2 &&
          absl::StrContains(cmdline, std::string("--runtime\0", 10))) {
        found.push_back(pid);
      }
    }
    return found;
  }
};

TEST_P(WarmTenantEscapeTest, NoFunctionFindsAnotherFunctionsSpecEventsOrReplies) {
  const std::string env_secret = "zygo-env-secret-" + RandomHex();
  const std::string event_secret = "zygo-event-secret-" + RandomHex();
  const std::string reply_secret(event_secret.rbegin(), event_secret.rend());
  ASSERT_TRUE(Up("victim",
                 absl::StrCat("name = \"victim\"\nentry = \"victim.py:main\"\n"
                              "[env]\nVICTIM_SECRET = \"",
                              env_secret, "\"\n"),
                 dir_ + "/victim")
                  .ok())
      << supervisor_->Log();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<nlohmann::json> reply = supervisor_->Exec("victim", {{"secret", event_secret}});
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ((*reply)["result"]["reply"], reply_secret) << reply->dump();
  }
  // Control: the supervisor's memory holds the victim's spec (its [env] value), which a
  // fork of it would copy.
  absl::StatusOr<bool> in_supervisor = MemoryContains(supervisor_->pid(), env_secret);
  ASSERT_TRUE(in_supervisor.ok()) << in_supervisor.status();
  ASSERT_TRUE(*in_supervisor) << "control: the supervisor holds the victim's spec";

  const std::vector<std::string> secrets = {env_secret, event_secret, reply_secret};
  WriteFile("attacker/needles.json", nlohmann::json(secrets).dump());
  ASSERT_TRUE(Up("attacker-py", "name = \"attacker-py\"\nentry = \"tenant_scan.py:main\"\n",
                 dir_ + "/attacker")
                  .ok())
      << supervisor_->Log();
  ASSERT_TRUE(Up("attacker-exec",
                 "name = \"attacker-exec\"\nruntime = \"exec\"\n"
                 "entry = [\"/usr/bin/python3\", \"/code/tenant_scan.py\"]\n",
                 dir_ + "/attacker")
                  .ok())
      << supervisor_->Log();

  absl::StatusOr<nlohmann::json> python =
      supervisor_->Exec("attacker-py", nlohmann::json::object());
  ASSERT_TRUE(python.ok()) << python.status();
  ASSERT_TRUE(python->value("ok", false)) << python->dump();
  const nlohmann::json& scan = (*python)["result"];
  EXPECT_EQ(scan["control"], true) << "the scanner finds a needle where it may read: " << scan;
  EXPECT_EQ(scan["import_found"], false) << scan["import_scan"];
  EXPECT_EQ(scan["request_found"], false) << scan["request_scan"];
  if (tree()) {
    // Forked, its zygote is pid 1 of a pid namespace of its own: at import time it sees
    // no other process at all, and its request sees its zygote and can read none of it.
    EXPECT_TRUE(scan["import_scan"].empty()) << scan["import_scan"];
    EXPECT_EQ(scan["request_scan"]["1"]["mem"], "EACCES") << scan["request_scan"];
    EXPECT_EQ(scan["request_scan"]["1"]["environ"], "EACCES") << scan["request_scan"];
  } else {
    for (const char* when : {"import_scan", "request_scan"}) {
      EXPECT_EQ(scan[when]["1"]["mem"], "EACCES") << when << ": " << scan[when];
      EXPECT_EQ(scan[when]["1"]["environ"], "EACCES") << when << ": " << scan[when];
    }
  }

  absl::StatusOr<nlohmann::json> exec =
      supervisor_->Exec("attacker-exec", nlohmann::json::object());
  ASSERT_TRUE(exec.ok()) << exec.status();
  nlohmann::json exec_scan =
      nlohmann::json::parse(exec->value("stdout", ""), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(exec_scan.is_object()) << exec->dump();
  EXPECT_EQ(exec_scan["control"], true) << exec_scan;
  EXPECT_EQ(exec_scan["request_found"], false) << exec_scan["request_scan"];
  EXPECT_EQ(exec_scan["request_scan"]["1"]["mem"], "EACCES") << exec_scan["request_scan"];

  // From outside, where nothing stops the reading: no process of a bystander's sandbox (a
  // Python and a warm-exec function made after the victim's requests, which, unlike the
  // attackers, were never told the needles) holds any of the victim's data.
  fs::create_directories(dir_ + "/bystander");
  WriteFile("bystander/bystander.py", "def main(event):\n    return 'idle'\n");
  ASSERT_TRUE(Up("bystander-py", "name = \"bystander-py\"\nentry = \"bystander.py:main\"\n",
                 dir_ + "/bystander")
                  .ok())
      << supervisor_->Log();
  ASSERT_TRUE(Up("bystander-exec",
                 "name = \"bystander-exec\"\nruntime = \"exec\"\nentry = [\"/bin/cat\"]\n",
                 dir_ + "/bystander")
                  .ok())
      << supervisor_->Log();
  ASSERT_TRUE(supervisor_->Exec("bystander-py", nlohmann::json::object()).ok());
  ASSERT_TRUE(supervisor_->Exec("bystander-exec", nlohmann::json::object()).ok());
  for (const char* entry : {"bystander.py:main", "/bin/cat"}) {
    const bool forked = tree() && absl::StrContains(entry, ".py");
    std::vector<pid_t> sandbox = forked ? ForkedZygoteOf("bystander.py") : SandboxOf(entry);
    ASSERT_FALSE(sandbox.empty()) << "no sandbox runs " << entry;
    int read = 0;
    for (pid_t pid : sandbox) {
      absl::StatusOr<bool> held = MemoryContainsAny(pid, secrets);
      if (!held.ok()) continue;  // gone meanwhile (a spare retired)
      ++read;
      EXPECT_FALSE(*held) << Argv0(pid) << " (" << pid << ") in the sandbox of " << entry
                          << " holds one of " << nlohmann::json(secrets);
    }
    // Its zygote agent, at least, lives as long as the function: read, or nothing was.
    EXPECT_GT(read, 0) << "no process in the sandbox of " << entry << " could be read";
  }
  if (!tree()) return;
  // The runtime zygote every Python function here forked from (the victim's, the
  // attacker's, the bystander's) was only ever told to fork: it holds none of it either.
  std::vector<pid_t> runtimes = RuntimeSandboxes();
  ASSERT_FALSE(runtimes.empty()) << "no runtime zygote";
  for (pid_t pid : runtimes) {
    absl::StatusOr<bool> held = MemoryContainsAny(pid, secrets);
    ASSERT_TRUE(held.ok()) << held.status();
    EXPECT_FALSE(*held) << Argv0(pid) << " (" << pid << "), a runtime zygote's, holds one of "
                        << nlohmann::json(secrets);
  }
}

INSTANTIATE_WARM_SUITE(WarmTenantEscapeTest);

}  // namespace
}  // namespace zygo::testing
