// A Node function's requests attacking what is around them, against a real supervisor:
// each request's worker is a fresh node started ahead of demand by a spare, so the other
// spares' workers (future requests, already holding the handler) and the agent are the
// targets. From inside a request: /proc/PID/mem and environ of every other worker and of
// the zygote, signal 0 to them, a write into a worker's /tmp through /proc/PID/root; each
// refusal beside the same attempt on a child the request started itself, which nothing
// protects from it. Then: a request that starts a detached child and loops past its deadline
// is killed with everything it started, and the next request answers; the supervisor's own
// environment is nowhere in a request.
#include <signal.h>

#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/host_features.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security_tests/supervisor_options.h"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

// {"op": "attack"}: every attempt on each other node worker and on the zygote (its spare's
// parent), and on its own `sleep` child as the control. Its own spare, its parent, is in
// its own domain: a Python request runs in its spare itself.
// {"op": "runaway", "marker": M}: a detached `sleep M`, then a busy loop.
// {"op": "env"}: its environment, and its worker's as /proc/self/environ has it.
constexpr char kProbe[] = R"js('use strict';
const childProcess = require('child_process');
const fs = require('fs');

function attempt(action) {
  try {
    const value = action();
    return value === undefined ? 'ok' : value;
  } catch (error) {
    return error.code || String(error);
  }
}

function cmdline(pid) {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0'); } catch { return []; }
}

function attemptsOn(pid) {
  return {
    mem: attempt(() => { fs.closeSync(fs.openSync(`/proc/${pid}/mem`, 'r')); return 'opened'; }),
    environ: attempt(() => fs.readFileSync(`/proc/${pid}/environ`).length > 0 ? 'read' : 'empty'),
    signal0: attempt(() => { process.kill(pid, 0); return 'sent'; }),
    write_tmp: attempt(() => { fs.writeFileSync(`/proc/${pid}/root/tmp/intruder-${process.pid}`, 'x');
                               return 'written'; }),
  };
}

exports.main = async (event) => {
  if (event.op === 'env') {
    return { env: process.env, environ: fs.readFileSync('/proc/self/environ', 'latin1') };
  }
  if (event.op === 'runaway') {
    childProcess.spawn('/bin/sleep', [event.marker], { detached: true, stdio: 'ignore' }).unref();
    for (;;) {}
  }
  const own = childProcess.spawn('/bin/sleep', ['30'], { stdio: 'ignore' });
  const answer = { self: process.pid, workers: {}, zygote: null, own_child: null };
  // The worker's parent is its spare, whose parent is the zygote.
  const zygote = Number(fs.readFileSync(`/proc/${process.ppid}/stat`, 'latin1')
                          .replace(/^.*\) /s, '').split(' ')[1]);
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || pid === own.pid) continue;
    const argv = cmdline(pid);
    if (pid === zygote) {
      answer.zygote = { pid, argv0: argv[0], ...attemptsOn(pid) };
    } else if (argv.includes('/proc/self/fd/4')) {  // a worker: node on its code's memfd
      answer.workers[pid] = attemptsOn(pid);
    }
  }
  answer.own_child = attemptsOn(own.pid);
  own.kill('SIGKILL');
  return answer;
};
)js";

class WarmNodeEscape : public WarmSuite {
 protected:
  void SetUp() override {
    WarmSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (core::ProbeHostFeatures().landlock_abi < 1) {
      GTEST_SKIP() << "the kernel has no Landlock: warm requests are not apart from each other";
    }
    WriteFile("code/probe.js", kProbe);
    SupervisorProcess::Options options = SecurityTestSupervisor();
    secret_ = "zygo-supervisor-secret-" + RandomHex();
    options.env.push_back(absl::StrCat("ZYGO_NODE_ESCAPE_SECRET=", secret_));
    StartSupervisor(options);
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(Up("nodeprobe",
                   "name = \"nodeprobe\"\nruntime = \"node\"\nentry = \"probe.js:main\"\n"
                   "spares = 3\ncold_after = \"0\"\n[limits]\ntimeout = \"3s\"\n")
                    .ok())
        << supervisor_->Log();
  }

  std::string secret_;
};

TEST_F(WarmNodeEscape, ARequestCannotReachTheOtherWorkersOrTheZygote) {
  // The first request warms the function; its spares' workers start meanwhile.
  nlohmann::json first = OverHttp("nodeprobe", {{"op", "attack"}});
  ASSERT_TRUE(first.value("ok", false)) << first.dump();
  absl::SleepFor(absl::Seconds(2));  // every spare's worker started and loaded
  nlohmann::json reply = OverHttp("nodeprobe", {{"op", "attack"}});
  ASSERT_TRUE(reply.value("ok", false)) << reply.dump();
  const nlohmann::json& answer = reply["result"];
  // The control: its own child, in its own domain, gives way to every attempt.
  EXPECT_EQ(answer["own_child"]["mem"], "opened") << answer;
  EXPECT_EQ(answer["own_child"]["environ"], "read") << answer;
  EXPECT_EQ(answer["own_child"]["signal0"], "sent") << answer;
  EXPECT_EQ(answer["own_child"]["write_tmp"], "written") << answer;
  // The other spares' workers were there to attack, and gave way to nothing.
  ASSERT_GE(answer["workers"].size(), 1u) << "no other worker was seen: " << answer;
  const bool scoped_signals = core::ProbeHostFeatures().landlock_abi >= 6;
  for (const auto& [pid, attempts] : answer["workers"].items()) {
    EXPECT_EQ(attempts["mem"], "EACCES") << "worker " << pid << ": " << answer;
    EXPECT_EQ(attempts["environ"], "EACCES") << "worker " << pid << ": " << answer;
    EXPECT_EQ(attempts["write_tmp"], "EACCES") << "worker " << pid << ": " << answer;
    if (scoped_signals) {
      EXPECT_EQ(attempts["signal0"], "EPERM") << "worker " << pid;
    }
  }
  ASSERT_TRUE(answer["zygote"].is_object()) << "the zygote was not seen: " << answer;
  EXPECT_EQ(answer["zygote"]["argv0"], "/.zygo-agent") << answer;
  EXPECT_EQ(answer["zygote"]["mem"], "EACCES") << answer;
  EXPECT_EQ(answer["zygote"]["environ"], "EACCES") << answer;
  if (scoped_signals) {
    EXPECT_EQ(answer["zygote"]["signal0"], "EPERM") << answer;
  }
}

TEST_F(WarmNodeEscape, ARequestPastItsDeadlineIsKilledWithWhatItStarted) {
  nlohmann::json before = OverHttp("nodeprobe", {{"op", "env"}});
  ASSERT_TRUE(before.value("ok", false)) << before.dump();
  // sleep's seconds, so digits only: a number no other process shows.
  const std::string marker =
      absl::StrCat(4000000 + std::stoul(RandomHex().substr(0, 6), nullptr, 16) % 5000000);
  const std::string& sleep_line = marker;  // its command line is "/bin/sleep\0MARKER"
  nlohmann::json runaway;
  std::thread request([&] {
    sdk::ApiClient client(supervisor_->api().socket_path());
    absl::StatusOr<nlohmann::json> reply = client.Call(
        {"POST", "/v1/functions/nodeprobe/exec",
         nlohmann::json({{"op", "runaway"}, {"marker", marker}}).dump(), "application/json"});
    runaway = reply.ok() ? *reply : nlohmann::json{{"request_failed", reply.status().ToString()}};
  });
  // The control: while the request runs, its detached child is there to be found.
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    seen = !ProcessesMatching(sleep_line).empty();
    if (!seen) absl::SleepFor(absl::Milliseconds(20));
  }
  request.join();
  EXPECT_TRUE(seen) << sleep_line << " never showed";
  EXPECT_EQ(runaway["outcome"]["status"], "timeout") << runaway.dump();
  // It went with its request's cgroup: none is left on the host.
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = ProcessesMatching(sleep_line).empty();
    if (!gone) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(gone) << sleep_line << " outlived its request";
  nlohmann::json next = OverHttp("nodeprobe", {{"op", "env"}});
  EXPECT_TRUE(next.value("ok", false)) << next.dump();
}

TEST_F(WarmNodeEscape, TheSupervisorsEnvironmentIsNotInARequest) {
  nlohmann::json reply = OverHttp("nodeprobe", {{"op", "env"}});
  ASSERT_TRUE(reply.value("ok", false)) << reply.dump();
  // The control: the request did report an environment (its TMPDIR at least).
  EXPECT_EQ(reply["result"]["env"].value("TMPDIR", ""), "/tmp") << reply.dump();
  EXPECT_EQ(reply.dump().find(secret_), std::string::npos) << reply.dump();
  EXPECT_EQ(reply.dump().find("ZYGO_NODE_ESCAPE_SECRET"), std::string::npos) << reply.dump();
}

}  // namespace
}  // namespace zygo::testing
