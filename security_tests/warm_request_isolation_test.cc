// Requests of one warm function attacking each other, against a real supervisor: a
// warm-exec function (`python3 sibling_probe.py` as its command) and a Python function
// (`sibling_probe.py:main`). While one request holds secrets (in its memory, in its
// environment, a file in its temp dir), a second one tries to find them through
// /proc/<first>/mem and environ, to write into and read from its temp dir, to signal it,
// to open its zygote's memory and to kill its zygote. Every refusal is paired with the
// same attempt, in the same request, on a holder the attacker started itself, which
// nothing protects from it and where each attempt succeeds.
#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/host_features.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security_tests/supervisor_options.h"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

constexpr char kExecFunction[] = "tenant-exec";
constexpr char kPythonFunction[] = "tenant-py";

// What a request answered: a warm-exec command's stdout, a Python handler's result; or why
// the request failed ({"request_failed": ...}).
nlohmann::json Answer(const absl::StatusOr<nlohmann::json>& reply, bool exec) {
  if (!reply.ok()) return {{"request_failed", reply.status().ToString()}};
  if (!reply->value("ok", false)) return {{"request_failed", reply->dump()}};
  if (!exec) return (*reply)["result"];
  nlohmann::json out =
      nlohmann::json::parse(reply->value("stdout", ""), nullptr, /*allow_exceptions=*/false);
  return out.is_object() ? out : nlohmann::json{{"request_failed", reply->dump()}};
}

struct Attack {
  nlohmann::json attacker;  // sibling_probe.py's attack answer
  nlohmann::json victim;    // its hold answer
};

// Run with each function in a sandbox of its own, and with the zygote tree.
class WarmRequestIsolationTest : public WarmSuiteBothLayouts {
 protected:
  void SetUp() override {
    WarmSuiteBothLayouts::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (core::ProbeHostFeatures().landlock_abi < 1) {
      GTEST_SKIP() << "the kernel has no Landlock: warm requests are not apart from each other";
    }
    std::filesystem::copy_file(Runfile("security_tests/testcases/sibling_probe.py"),
                               dir_ + "/code/sibling_probe.py");
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.env.push_back(absl::StrCat("ZYGO_WARM_ISOLATION_TEST_MARKER=", dir_, "/"));
    StartSupervisor(options);
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string common = "cold_after = \"0\"\n[limits]\ntimeout = \"30s\"\n";
    ASSERT_TRUE(
        Up(kExecFunction, absl::StrCat("name = \"", kExecFunction,
                                       "\"\nruntime = \"exec\"\nentry = [\"/usr/bin/python3\", "
                                       "\"/code/sibling_probe.py\"]\n",
                                       common))
            .ok())
        << supervisor_->Log();
    ASSERT_TRUE(Up(kPythonFunction, absl::StrCat("name = \"", kPythonFunction,
                                                 "\"\nentry = \"sibling_probe.py:main\"\n", common))
                    .ok())
        << supervisor_->Log();
  }

  // One victim request of `function` holding fresh secrets, and while it holds, one
  // attacker request of the same function; fails unless both answered and the victim
  // held while the attacker came. `kill_zygote`: "0" or "KILL".
  void Run(const std::string& function, const std::string& kill_zygote, Attack* attack) {
    const bool exec = function == kExecFunction;
    const std::string memory_secret = "zygo-memory-secret-" + RandomHex();
    // Only a re-exec'd command can hold its own environment; a Python request shares its
    // zygote's.
    const std::string environ_secret = exec ? "zygo-environ-secret-" + RandomHex() : "";
    // Its own connection: ApiClient keeps one and is not for two threads.
    std::thread victim([&] {
      sdk::ApiClient client(supervisor_->api().socket_path());
      attack->victim =
          Answer(client.Call({"POST", absl::StrCat("/v1/functions/", function, "/exec"),
                              nlohmann::json({{"mode", "hold"},
                                              {"memory_secret", memory_secret},
                                              {"environ_secret", environ_secret},
                                              {"hold_s", 20}})
                                  .dump(),
                              "application/json"}),
                 exec);
    });
    attack->attacker = Answer(supervisor_->Exec(function, {{"mode", "attack"},
                                                           {"memory_secret", memory_secret},
                                                           {"environ_secret", environ_secret},
                                                           {"kill_zygote", kill_zygote}}),
                              exec);
    victim.join();
    ASSERT_FALSE(attack->attacker.contains("request_failed") || attack->attacker.contains("error"))
        << attack->attacker;
    ASSERT_FALSE(attack->victim.contains("request_failed")) << attack->victim;
    EXPECT_GT(attack->victim.value("held", 0), 0) << attack->victim;
    EXPECT_EQ(attack->victim["saw_attacker"], true) << attack->victim;
  }

  // Each attempt on the sibling is refused as `refused` says, beside the same attempt on
  // the attacker's own child, which gets through as `succeeded` says.
  struct Pair {
    std::string attempt, succeeded, refused;
  };
  static void ExpectApart(const Attack& attack, std::initializer_list<Pair> pairs) {
    for (const Pair& pair : pairs) {
      EXPECT_EQ(attack.attacker["own_child"][pair.attempt], pair.succeeded)
          << pair.attempt << " on its own child: " << attack.attacker;
      EXPECT_EQ(attack.attacker["sibling"][pair.attempt], pair.refused)
          << pair.attempt << " on the sibling: " << attack.attacker;
    }
  }

  // How many times `function`'s zygote came up.
  int Warmed(const std::string& function) {
    const std::string log = supervisor_->Log();
    const std::string line = absl::StrCat("zygo serve: ", function, " is warm");
    int count = 0;
    for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) {
      ++count;
    }
    return count;
  }
};

TEST_P(WarmRequestIsolationTest, AWarmExecRequestCannotReadASiblingsMemoryEnvironmentOrTmp) {
  Attack attack;
  ASSERT_NO_FATAL_FAILURE(Run(kExecFunction, "0", &attack));
  // Ptrace access, which /proc/PID/mem and environ go through, is refused across Landlock
  // domains; the own child is in the attacker's.
  ExpectApart(attack, {{"mem", "found", "EACCES"}, {"environ", "found", "EACCES"}});
  EXPECT_EQ(attack.attacker["zygote"]["mem"], "EACCES") << attack.attacker;
  // The victim's dir is its own /tmp, reached through its /proc root (the control: the
  // attacker's own child's, the same way); the attacker's /tmp never had the victim's file.
  EXPECT_EQ(attack.victim.value("dir", ""), "/tmp") << attack.victim;
  EXPECT_EQ(attack.attacker["sibling"]["dir"],
            absl::StrCat("/proc/", attack.attacker["sibling"].value("pid", 0), "/root/tmp"))
      << attack.attacker;
  ExpectApart(attack, {{"write", "written", "EACCES"}, {"read", "read", "EACCES"}});
  EXPECT_EQ(attack.victim["dir_now"], nlohmann::json::array({"secret"})) << attack.victim;
  EXPECT_EQ(attack.attacker["own_tmp"], nlohmann::json::array({"control"})) << attack.attacker;
}

// Landlock's signal scoping (ABI 6): a request's signals stay inside its own domain.
TEST_P(WarmRequestIsolationTest, AWarmExecRequestCannotSignalASiblingOrKillItsZygote) {
  if (core::ProbeHostFeatures().landlock_abi < 6) {
    GTEST_SKIP() << "Landlock ABI " << core::ProbeHostFeatures().landlock_abi
                 << " < 6 has no signal scoping: a warm-exec request can still signal its "
                    "siblings and its zygote";
  }
  Attack probe;
  ASSERT_NO_FATAL_FAILURE(Run(kExecFunction, "0", &probe));
  ExpectApart(probe, {{"signal0", "sent", "EPERM"}});
  EXPECT_EQ(probe.attacker["zygote"]["kill"], "EPERM") << probe.attacker;

  // SIGKILL (harmless if it got through: only this test's function would die). Run also
  // checks that the victim, a child of the zygote, answered.
  Attack kill;
  ASSERT_NO_FATAL_FAILURE(Run(kExecFunction, "KILL", &kill));
  EXPECT_EQ(kill.attacker["own_child"]["kill"], "sent") << kill.attacker;
  EXPECT_EQ(kill.attacker["zygote"]["kill"], "EPERM") << kill.attacker;
  // A dead zygote is warmed again by the next request: one more, then count the warm-ups.
  const nlohmann::json after =
      Answer(supervisor_->Exec(kExecFunction,
                               {{"mode", "hold"}, {"memory_secret", "after"}, {"hold_s", 0}}),
             true);
  ASSERT_FALSE(after.contains("request_failed")) << after;
  EXPECT_EQ(after.value("held", 0), 5) << after;
  EXPECT_EQ(Warmed(kExecFunction), 1) << "the zygote died: " << supervisor_->Log();
}

TEST_P(WarmRequestIsolationTest, APythonRequestCannotReadASiblingsMemory) {
  Attack attack;
  ASSERT_NO_FATAL_FAILURE(Run(kPythonFunction, "0", &attack));
  ExpectApart(attack, {{"mem", "found", "EACCES"}});
  EXPECT_EQ(attack.attacker["zygote"]["mem"], "EACCES") << attack.attacker;
}

INSTANTIATE_WARM_SUITE(WarmRequestIsolationTest);

}  // namespace
}  // namespace zygo::testing
