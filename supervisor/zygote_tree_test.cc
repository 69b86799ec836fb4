// The zygote tree end to end, through the service core with real sandboxes: Python
// functions on one image fork their zygotes from one runtime zygote, and each is still a
// sandbox of its own (its code, environment, pid namespace, no capabilities). What every
// warm request can do is warm_python_test's, which runs with the tree too.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/service_fixture.h"

namespace zygo::supervisor {
namespace {

constexpr char kAbout[] = R"(import os

MARK = open("/code/mark.txt").read().strip()

def about(event):
    procs = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    with open("/proc/1/cmdline", "rb") as f:
        pid1 = f.read()
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith("CapEff")][0]
    return {"mark": MARK, "greeting": os.environ.get("GREETING"), "tz": os.environ.get("TZ"),
            "pid": os.getpid(), "ppid": os.getppid(), "procs": procs,
            "pid1_is_the_agent": b".zygo-agent" in pid1, "cap_eff": caps, "cwd": os.getcwd()}
)";

class ZygoteTreeTest : public ServiceFixture {
 protected:
  ZygoteTreeTest() { zygote_tree_ = true; }

  // A function `name` in a code dir of its own whose mark.txt holds `mark`.
  void UpAbout(const std::string& name, const std::string& mark, const std::string& env) {
    const std::string dir = absl::StrCat(dir_, "/", name);
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    WriteCode(absl::StrCat(name, "/about.py"), kAbout);
    WriteCode(absl::StrCat(name, "/mark.txt"), mark);
    Up(absl::StrCat("name = \"", name, "\"\ncode = \"", name, "\"\nentry = \"about.py:about\"\n",
                    "[env]\n", env, "\n"));
  }

  nlohmann::json About(const std::string& name) {
    ExecReply reply = Call(name);
    EXPECT_TRUE(reply.status.ok()) << reply.status;
    EXPECT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
    return nlohmann::json::parse(reply.result_json.empty() ? "null" : reply.result_json);
  }

  bool Forked(const std::string& name) {
    for (const FunctionInfo& info : service_->List()) {
      if (info.name == name) return info.forked;
    }
    return false;
  }
};

TEST_F(ZygoteTreeTest, FunctionsShareOneRuntimeZygoteAndEachSeesOnlyItsOwn) {
  UpAbout("alpha", "alpha's code", "GREETING = \"hello from alpha\"");
  UpAbout("beta", "beta's code", "GREETING = \"hello from beta\"");
  const nlohmann::json alpha = About("alpha");
  const nlohmann::json beta = About("beta");
  EXPECT_TRUE(Forked("alpha"));
  EXPECT_TRUE(Forked("beta"));
  EXPECT_EQ(OurRuntimeZygotes().size(), 1u);
  EXPECT_EQ(OurAgents().size(), 2u);  // the two function zygotes
  EXPECT_EQ(alpha["mark"], "alpha's code");
  EXPECT_EQ(beta["mark"], "beta's code");
  EXPECT_EQ(alpha["greeting"], "hello from alpha");
  EXPECT_EQ(beta["greeting"], "hello from beta");
  for (const nlohmann::json& seen : {alpha, beta}) {
    // The request's parent, the function's zygote, is pid 1 of the function's own pid
    // namespace, and /proc is that namespace's: the zygote, its spares and this request.
    EXPECT_EQ(seen["ppid"], 1) << seen;
    EXPECT_TRUE(seen["pid1_is_the_agent"].get<bool>()) << seen;
    const std::vector<int> procs = seen["procs"];
    EXPECT_NE(std::find(procs.begin(), procs.end(), seen["pid"].get<int>()), procs.end()) << seen;
    // The zygote, this request, and at most two spares and this request's replacement.
    EXPECT_LE(procs.size(), 5u) << seen;
    EXPECT_EQ(seen["cap_eff"], "0000000000000000") << seen;
    EXPECT_EQ(seen["cwd"], "/code") << seen;
  }
}

TEST_F(ZygoteTreeTest, WhatTheInterpreterReadsAtStartSplitsRuntimes) {
  UpAbout("utc", "u", "TZ = \"UTC\"\nGREETING = \"a\"");
  UpAbout("tokyo", "t", "TZ = \"Asia/Tokyo\"");
  UpAbout("utc2", "u2", "TZ = \"UTC\"\nGREETING = \"b\"");
  EXPECT_EQ(About("utc")["tz"], "UTC");
  EXPECT_EQ(About("tokyo")["tz"], "Asia/Tokyo");
  EXPECT_EQ(About("utc2")["greeting"], "b");
  // UTC's two share a runtime; Tokyo has its own.
  EXPECT_EQ(OurRuntimeZygotes().size(), 2u);
  EXPECT_EQ(OurAgents().size(), 3u);
}

TEST_F(ZygoteTreeTest, ARuntimeZygoteKilledTakesItsFunctionsWhichWarmAgain) {
  UpAbout("alpha", "a", "GREETING = \"x\"");
  ASSERT_EQ(About("alpha")["mark"], "a");
  std::vector<int> runtimes = OurRuntimeZygotes();
  ASSERT_EQ(runtimes.size(), 1u);
  ASSERT_EQ(kill(runtimes[0], SIGKILL), 0);
  // Its function zygote lived in its pid namespace, so it is gone too; the function warms
  // again, from a new runtime zygote, at its next request (the first may find it dying).
  ExecReply reply = Call("alpha");
  if (!reply.status.ok()) reply = Call("alpha");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_TRUE(reply.ok) << reply.error_message;
  std::vector<int> now = OurRuntimeZygotes();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], runtimes[0]);
  EXPECT_TRUE(Forked("alpha"));
}

}  // namespace
}  // namespace zygo::supervisor
