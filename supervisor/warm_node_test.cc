// Warm Node functions end to end through the service core, with real sandboxes and the
// Node agent (a fresh node worker per request, started ahead of demand in the request's
// cgroup): CommonJS and ES module handlers, async ones, captured output, thrown errors,
// the deadline, the memory limit, a node pool, and an image without node.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/service_fixture.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

constexpr char kHandlers[] = R"(const fs = require("fs");

let calls = 0;  // module state: every request must see the worker's fresh copy

exports.echo = (event) => event;

exports.count = () => {
  calls += 1;
  return calls;
};

exports.later = async (event) => {
  await new Promise((resolve) => setTimeout(resolve, 100));
  return { awaited: event };
};

exports.noisy = () => {
  console.log("to stdout");
  console.error("to stderr");
  return "done";
};

exports.boom = (event) => {
  throw new TypeError("bad input: " + event);
};

exports.maybe_spin = (event) => {
  if (event === "spin") {
    console.log("spinning");
    for (;;) {}
  }
  return "answered";
};

exports.hog = () => {
  const blocks = [];
  for (;;) {
    const block = Buffer.alloc(16 << 20);
    block.fill(1);  // every page written, so it is really charged
    blocks.push(block);
  }
};

exports.tmp = (event) => {
  const before = fs.readdirSync("/tmp").sort();
  fs.writeFileSync("/tmp/x", String(event));
  return { before, x: fs.readFileSync("/tmp/x", "utf8"), tmpdir: require("os").tmpdir() };
};

// Wakes libuv's thread pool (4 more threads) and reports the worker's thread count.
exports.threads = async () => {
  await new Promise((resolve, reject) =>
    require("crypto").pbkdf2("a", "b", 1000, 32, "sha256", (e) => (e ? reject(e) : resolve())));
  return Number(/Threads:\s+(\d+)/.exec(fs.readFileSync("/proc/self/status", "utf8"))[1]);
};

exports.cgroups = () => fs.readFileSync("/proc/self/cgroup", "utf8").split("\n");
)";

constexpr char kModule[] = R"(import { readFileSync } from "node:fs";

let calls = 0;

export async function main(event) {
  calls += 1;
  return { url: import.meta.url, calls, event, cwd: process.cwd(),
           code: readFileSync("/code/handler.mjs", "utf8").length > 0,
           globals: [typeof require, typeof module, typeof fs, typeof process] };
}
)";

class WarmNodeTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteCode("handlers.js", kHandlers);
    WriteCode("handler.mjs", kModule);
  }

  void UpHandler(const std::string& function, const std::string& extra = "") {
    Up(absl::StrCat("name = \"", function, "\"\nruntime = \"node\"\nentry = \"handlers.js:",
                    function, "\"\n", extra, "[limits]\ntimeout = \"5s\"\nmemory = \"128M\"\n"));
  }

  static nlohmann::json Result(const ExecReply& reply) {
    return nlohmann::json::parse(reply.result_json.empty() ? "null" : reply.result_json);
  }
};

TEST_F(WarmNodeTest, CommonJsHandlerAnswers) {
  UpHandler("echo");
  for (const char* event : {"null", "true", "42", "-1.5", "\"caf\\u00e9\"",
                            "[1, [2, {\"a\": null}]]", "{\"name\": \"zygo\", \"n\": [1, 2.5]}"}) {
    ExecReply reply = Call("echo", event);
    ASSERT_TRUE(reply.status.ok()) << reply.status;
    ASSERT_TRUE(reply.ok) << event << ": " << reply.error_type << " " << reply.error_message;
    EXPECT_EQ(Result(reply), nlohmann::json::parse(event)) << event;
    EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kOk);
  }
  // Node never forks from a runtime zygote: there is no interpreter to share.
  EXPECT_TRUE(OurRuntimeZygotes().empty());
  EXPECT_FALSE(service_->List()[0].forked);
}

TEST_F(WarmNodeTest, EsModuleHandlerAnswersAndIsAwaited) {
  Up("name = \"esm\"\nruntime = \"node\"\nentry = \"handler.mjs:main\"\n");
  for (int i = 0; i < 3; ++i) {
    ExecReply reply = Call("esm", "{\"x\": 1}");
    ASSERT_TRUE(reply.status.ok()) << reply.status;
    ASSERT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message << reply.traceback;
    const nlohmann::json result = Result(reply);
    EXPECT_EQ(result["url"], "file:///code/handler.mjs") << "loaded as an ES module";
    // The globals of a module `node` runs: no CommonJS names, no built-ins by name.
    EXPECT_EQ(result["globals"], nlohmann::json({"undefined", "undefined", "undefined", "object"}))
        << result;
    EXPECT_EQ(result["calls"], 1) << "request " << i << " saw another request's state";
    EXPECT_EQ(result["event"], nlohmann::json::parse("{\"x\": 1}"));
    EXPECT_EQ(result["cwd"], "/code");
    EXPECT_EQ(result["code"], true);
  }
}

TEST_F(WarmNodeTest, AsyncHandlerIsAwaited) {
  UpHandler("later");
  ExecReply reply = Call("later", "\"then\"");
  ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_type << ": " << reply.error_message;
  EXPECT_EQ(Result(reply), nlohmann::json::parse(R"({"awaited": "then"})"));
}

TEST_F(WarmNodeTest, EveryRequestStartsWithFreshModuleState) {
  UpHandler("count");
  for (int i = 0; i < 5; ++i) {
    ExecReply reply = Call("count");
    ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_message;
    EXPECT_EQ(Result(reply), 1) << "request " << i << " saw another request's state";
  }
}

// A handler writes /tmp/x on every request; the next request finds /tmp empty again.
TEST_F(WarmNodeTest, EachRequestHasItsOwnEmptyTmp) {
  UpHandler("tmp");
  for (int i = 0; i < 3; ++i) {
    ExecReply reply = Call("tmp", absl::StrCat(i));
    ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_type << ": " << reply.error_message;
    const nlohmann::json result = Result(reply);
    EXPECT_EQ(result["x"], absl::StrCat(i)) << "control: it wrote";
    EXPECT_EQ(result["tmpdir"], "/tmp");
    EXPECT_EQ(result["before"], nlohmann::json::array())
        << "request " << i << " saw an earlier request's files";
  }
}

TEST_F(WarmNodeTest, CapturesConsoleOutput) {
  UpHandler("noisy");
  ExecReply reply = Call("noisy");
  ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_message;
  EXPECT_EQ(reply.stdout_data, "to stdout\n");
  EXPECT_EQ(reply.stderr_data, "to stderr\n");
  EXPECT_EQ(Result(reply), "done");
}

TEST_F(WarmNodeTest, ThrownErrorComesBackWithItsTypeAndStack) {
  UpHandler("boom");
  ExecReply reply = Call("boom", "7");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.error_type, "TypeError");
  EXPECT_EQ(reply.error_message, "bad input: 7");
  EXPECT_TRUE(absl::StrContains(reply.traceback, "handlers.js")) << reply.traceback;
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kHandlerError);
}

TEST_F(WarmNodeTest, MalformedEventIsRefusedBeforeItRuns) {
  UpHandler("echo");
  ExecReply reply = Call("echo", "{not json");
  EXPECT_TRUE(absl::IsInvalidArgument(reply.status)) << reply.status;
}

TEST_F(WarmNodeTest, LoopPastDeadlineIsKilledAndTheNextRequestAnswers) {
  Up("name = \"maybe_spin\"\nruntime = \"node\"\nentry = \"handlers.js:maybe_spin\"\n"
     "[limits]\ntimeout = \"1s\"\n");
  ASSERT_TRUE(Call("maybe_spin", "1").ok) << "control: it answers when it does not loop";
  auto start = std::chrono::steady_clock::now();
  ExecReply reply = Call("maybe_spin", "\"spin\"");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kTimeout);
  EXPECT_TRUE(reply.outcome.timed_out);
  EXPECT_EQ(reply.error_type, "timeout");
  ExecReply next = Call("maybe_spin", "2");
  ASSERT_TRUE(next.status.ok()) << next.status;
  EXPECT_TRUE(next.ok) << next.error_type << ": " << next.error_message;
  EXPECT_EQ(Result(next), "answered");
}

// 64M: a worker (~40 MB resident) answers within it, and one that fills Buffers past it
// is killed for it.
TEST_F(WarmNodeTest, MemoryExhaustionIsAnOomKill) {
  for (const char* name : {"echo", "hog"}) {
    Up(absl::StrCat("name = \"", name, "\"\nruntime = \"node\"\nentry = \"handlers.js:", name,
                    "\"\n[limits]\nmemory = \"64M\"\ntimeout = \"10s\"\n"));
  }
  ExecReply control = Call("echo", "3");
  ASSERT_TRUE(control.ok) << control.status << " " << control.error_type << ": "
                          << control.error_message << control.stderr_data;
  EXPECT_EQ(Result(control), 3);
  ExecReply reply = Call("hog");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kOom)
      << reply.error_type << " " << reply.error_message << reply.stderr_data;
  EXPECT_TRUE(reply.outcome.oom_killed);
  EXPECT_EQ(reply.error_type, "oom");
  EXPECT_TRUE(Call("hog").outcome.oom_killed) << "the function serves on, and again";
}

// Each request's worker runs in the request's own cgroup, with the default pids limit
// (64): a worker's ~10 threads fit.
TEST_F(WarmNodeTest, EachRequestRunsInItsOwnCgroup) {
  Up("name = \"cgroups\"\nruntime = \"node\"\nentry = \"handlers.js:cgroups\"\n");
  std::vector<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    ExecReply reply = Call("cgroups");
    ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_message;
    // The memory hierarchy's line on cgroup v1, the one unified line ("0::") on v2.
    std::string own;
    for (const auto& line : Result(reply)) {
      const std::string text = line.get<std::string>();
      if (absl::StrContains(text, ":memory:") || (own.empty() && absl::StartsWith(text, "0::"))) {
        own = text;
      }
    }
    ASSERT_FALSE(own.empty()) << "no cgroup line: " << reply.result_json;
    EXPECT_TRUE(absl::StrContains(own, "/request-")) << own;
    seen.push_back(own);
  }
  EXPECT_NE(seen[0], seen[1]);
}

// What docs/function-spec.md tells a node function to leave it: limits.pids = 16 holds a
// worker with its thread pool awake (the spare, and node's 7-11 threads).
TEST_F(WarmNodeTest, AWorkerFitsInSixteenPids) {
  Up("name = \"threads\"\nruntime = \"node\"\nentry = \"handlers.js:threads\"\n"
     "[limits]\npids = 16\n");
  for (int i = 0; i < 3; ++i) {
    ExecReply reply = Call("threads");
    ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_type << ": " << reply.error_message
                          << reply.stderr_data;
    EXPECT_GE(Result(reply).get<int>(), 7) << "control: node's threads were counted";
    EXPECT_LE(Result(reply).get<int>(), 15);
    EXPECT_NE(reply.outcome.status, core::OutcomeStatus::kPidsLimit);
  }
}

TEST_F(WarmNodeTest, PoolRunsScriptsPutByDigest) {
  Up("name = \"jspool\"\nruntime = \"node\"\npool = true\n");
  auto first = service_->PutScript("function handler(event) { return ['first', event]; }\n");
  auto second = service_->PutScript(
      "exports.handler = async (event) => { console.log('second'); return ['second', event]; };\n");
  ASSERT_TRUE(first.ok() && second.ok());
  ExecReply one = Call("jspool", "1", *first);
  ASSERT_TRUE(one.ok) << one.status << " " << one.error_type << ": " << one.error_message;
  EXPECT_EQ(Result(one), nlohmann::json::parse(R"(["first", 1])"));
  ExecReply two = Call("jspool", "2", *second);
  ASSERT_TRUE(two.ok) << two.status << " " << two.error_type << ": " << two.error_message;
  EXPECT_EQ(Result(two), nlohmann::json::parse(R"(["second", 2])"));
  EXPECT_EQ(two.stdout_data, "second\n");
  // Twice: a node pool is never sent bytecode (its spares send none back).
  EXPECT_EQ(Result(Call("jspool", "3", *first)), nlohmann::json::parse(R"(["first", 3])"));
  auto raises = service_->PutScript("function handler() { throw new RangeError('no'); }\n");
  ASSERT_TRUE(raises.ok());
  ExecReply raised = Call("jspool", "null", *raises);
  EXPECT_FALSE(raised.ok);
  EXPECT_EQ(raised.error_type, "RangeError");
  EXPECT_TRUE(absl::IsNotFound(Call("jspool", "3", "sha256:" + std::string(64, 'a')).status));
  EXPECT_TRUE(absl::IsInvalidArgument(Call("jspool", "3").status)) << "a pool call names a script";
}

// A handler that does not load fails the warm-up with the agent's line, as a Python
// import error does.
TEST_F(WarmNodeTest, HandlerThatFailsToLoadIsReported) {
  WriteCode("broken.js", "require('no-such-module-anywhere');\nexports.main = () => 1;\n");
  Up("name = \"broken\"\nruntime = \"node\"\nentry = \"broken.js:main\"\n");
  ExecReply reply = Call("broken");
  EXPECT_TRUE(absl::IsFailedPrecondition(reply.status)) << reply.status;
  EXPECT_TRUE(absl::StrContains(reply.status.message(), "no-such-module-anywhere")) << reply.status;
}

// busybox has no node: the function does not warm, says why in one line, and no sandbox
// was started for it.
TEST_F(WarmNodeTest, AnImageWithoutNodeIsRefusedBeforeAnythingStarts) {
  UseOwnImageStore();
  LoadTestImage("busybox", "nonode:test");
  Up("name = \"nonode\"\nruntime = \"node\"\nentry = \"handlers.js:echo\"\n"
     "image = \"nonode:test\"\npull = \"never\"\n");
  ExecReply reply = Call("nonode");
  EXPECT_TRUE(absl::IsFailedPrecondition(reply.status)) << reply.status;
  EXPECT_EQ(reply.status.message(),
            "test.toml: runtime \"node\": the image nonode:test has no node on its PATH (/bin)");
  EXPECT_TRUE(OurAgents().empty());
  const std::vector<FunctionInfo> listed = service_->List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].error, reply.status.message());
  EXPECT_EQ(listed[0].runtime, Runtime::kNode);
  // The control: the same function on the host image, whose node is the host's, warms.
  Up("name = \"nonode\"\nruntime = \"node\"\nentry = \"handlers.js:echo\"\n");
  ExecReply host = Call("nonode", "5");
  ASSERT_TRUE(host.ok) << host.status << " " << host.error_message;
  EXPECT_EQ(Result(host), 5);
}

// The opt-in node image (Debian's nodejs): its own node, found through its PATH and
// links inside its root, runs the handler.
TEST_F(WarmNodeTest, RunsOnTheImagesOwnNode) {
  UseOwnImageStore();
  absl::StatusOr<testing::TestImage> image = testing::BuildTestImage("node");
  if (!image.ok()) GTEST_SKIP() << image.status() << " (needs root and the Debian mirror)";
  LoadTestImage("node", "node:test");
  WriteCode("version.js", "exports.main = () => process.version;\n");
  ::testing::internal::CaptureStderr();  // the agents' log lines go to this process's
  Up("name = \"imaged\"\nruntime = \"node\"\nentry = \"version.js:main\"\n"
     "image = \"node:test\"\npull = \"never\"\n");
  ExecReply reply = Call("imaged");
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_type << ": " << reply.error_message;
  EXPECT_TRUE(absl::StartsWith(Result(reply).get<std::string>(), "v18.")) << reply.result_json;
  // Debian's node ships no startup snapshot: the agent made one for its workers.
  EXPECT_NE(log.find("workers start from a snapshot of their code (this node has no"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace zygo::supervisor
