// Warm Python functions end to end through the service core, with real sandboxes and the
// embedded-CPython agent: results and errors, every way a request can go wrong, and what
// each request must not share with another.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/service_fixture.h"

namespace zygo::supervisor {
namespace {

constexpr char kHandlers[] = R"(import ctypes, errno, os, random, sys, tempfile, time, uuid

calls = 0  # module state: every request must see the zygote's copy, untouched

def echo(event):
    return event

def count(event):
    global calls
    calls += 1
    return calls

def noisy(event):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    return "done"

def stdio(event):
    return {"write_through": sys.stdout.write_through,
            "binary_layer": type(sys.stdout.buffer).__name__,
            "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED")}

def buffered(event):
    sys.stdout.reconfigure(write_through=False)
    sys.stdout.write("held in a buffer")
    return "done"

def boom(event):
    raise ValueError("bad input: " + str(event))

def spin(event):
    print("spinning")  # unbuffered: kept although the request is killed
    while True:
        pass

def hog(event):
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))

def fill(event):
    # Writes /tmp full, 1 MiB at a time: the request's memory limit bounds it.
    written = 0
    chunk = b"x" * (1 << 20)
    try:
        with open("/tmp/fill", "wb", buffering=0) as f:
            while written < (1 << 30):
                f.write(chunk)
                written += len(chunk)
    except OSError as e:
        return {"written": written, "error": errno.errorcode.get(e.errno, "?")}
    return {"written": written}

def segfault(event):
    os.kill(os.getpid(), signal.SIGSEGV)

def close_stdout(event):
    os.close(1)
    return "still answered"

def sleep(event):
    time.sleep(event)
    return "slept"

def unique(event):
    return {"random": random.random(), "uuid": str(uuid.uuid4()), "pid": os.getpid()}

def tmp(event):
    names = sorted(os.listdir("/tmp"))
    with open("/tmp/x", "w") as f:
        f.write(event)
    with open(os.path.join(tempfile.gettempdir(), "y"), "w") as f:
        f.write(event)
    return {"tmpdir": tempfile.gettempdir(), "before": names, "x": open("/tmp/x").read()}

def kill_parent(event):
    try:
        os.kill(os.getppid(), signal.SIGKILL)
        return "killed the zygote"
    except PermissionError as e:
        return "refused: " + type(e).__name__

def fds(event):
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd"))

def cgroups(event):
    return open("/proc/self/cgroup").read().splitlines()

def peek(event):
    # Writes its token into /tmp/secret, waits while the other request does the same, then
    # reads back what /tmp holds.
    before = sorted(os.listdir("/tmp"))
    with open("/tmp/secret-" + event["token"], "w") as f:
        f.write(event["token"])
    time.sleep(event["sleep"])
    return {"before": before, "after": sorted(os.listdir("/tmp")),
            "own": open("/tmp/secret-" + event["token"]).read()}

def nest(event):
    # unshare(CLONE_NEWUSER | CLONE_NEWNS), which the sandbox lets only a spare make.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x00020000) == 0:
        return "made"
    return errno.errorcode.get(ctypes.get_errno(), "?")

def unencodable(event):
    return {1, 2, 3}

import signal
)";

// Every test runs twice: the function's zygote in a sandbox of its own, and forked from a
// runtime zygote and sealed (the zygote tree); a request must not tell the difference.
class WarmPythonTest : public ServiceFixture, public ::testing::WithParamInterface<bool> {
 protected:
  WarmPythonTest() { zygote_tree_ = GetParam(); }

  void SetUp() override {
    ServiceFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteCode("handlers.py", kHandlers);
  }

  void UpHandler(const std::string& function, const std::string& extra = "") {
    Up(absl::StrCat("name = \"", function, "\"\nentry = \"handlers.py:", function,
                    "\"\n[limits]\ntimeout = \"2s\"\nmemory = \"128M\"\n", extra));
  }

  static nlohmann::json Result(const ExecReply& reply) {
    return nlohmann::json::parse(reply.result_json.empty() ? "null" : reply.result_json);
  }
};

TEST_P(WarmPythonTest, EventsAndResultsCrossAsPythonObjects) {
  UpHandler("echo");
  for (const char* event :
       {"null", "true", "42", "123456789012345678901234567890", "-1.5", "\"caf\\u00e9\"",
        "[1, [2, {\"a\": null}]]", "{\"name\": \"zygo\", \"n\": [1, 2.5, false]}"}) {
    ExecReply reply = Call("echo", event);
    ASSERT_TRUE(reply.status.ok()) << reply.status;
    ASSERT_TRUE(reply.ok) << event << ": " << reply.error_type << " " << reply.error_message;
    EXPECT_EQ(Result(reply), nlohmann::json::parse(event)) << event;
  }
}

TEST_P(WarmPythonTest, MalformedEventIsRefusedBeforeItRuns) {
  UpHandler("echo");
  ExecReply reply = Call("echo", "{not json");
  EXPECT_TRUE(absl::IsInvalidArgument(reply.status)) << reply.status;
}

TEST_P(WarmPythonTest, EveryRequestStartsFromTheZygotesMemory) {
  UpHandler("count");
  for (int i = 0; i < 5; ++i) {
    ExecReply reply = Call("count");
    ASSERT_TRUE(reply.ok) << reply.error_message;
    EXPECT_EQ(Result(reply), 1) << "request " << i << " saw another request's state";
  }
}

TEST_P(WarmPythonTest, CapturesStdoutAndStderr) {
  UpHandler("noisy");
  ExecReply reply = Call("noisy");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  EXPECT_EQ(reply.stdout_data, "to stdout\n");
  EXPECT_EQ(reply.stderr_data, "to stderr\n");
  EXPECT_EQ(Result(reply), "done");
}

// Unbuffered like PYTHONUNBUFFERED=1 (a killed request keeps its output; the zygote has no
// buffered output for its forks to copy), without the variable showing in the environment.
TEST_P(WarmPythonTest, StdioIsUnbufferedAndTheEnvironmentUntouched) {
  UpHandler("stdio");
  ExecReply reply = Call("stdio");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  const nlohmann::json result = Result(reply);
  EXPECT_EQ(result["write_through"], true) << result;
  EXPECT_EQ(result["binary_layer"], "FileIO") << result;
  EXPECT_TRUE(result["PYTHONUNBUFFERED"].is_null()) << result;
}

// A function whose env sets the variable empty (unset, to Python) still gets unbuffered
// stdio, and finds its own value in the environment.
TEST_P(WarmPythonTest, AnEmptyPythonUnbufferedIsKept) {
  UpHandler("stdio", "[env]\nPYTHONUNBUFFERED = \"\"\n");
  ExecReply reply = Call("stdio");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  const nlohmann::json result = Result(reply);
  EXPECT_EQ(result["write_through"], true) << result;
  EXPECT_EQ(result["PYTHONUNBUFFERED"], "") << result;
}

// The interpreter's own streams are not flushed while they write through; one a handler
// made buffered again is, or its output would be lost.
TEST_P(WarmPythonTest, AStreamMadeBufferedIsStillFlushed) {
  UpHandler("buffered");
  ExecReply reply = Call("buffered");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  EXPECT_EQ(reply.stdout_data, "held in a buffer");
}

TEST_P(WarmPythonTest, ExceptionComesBackWithItsTraceback) {
  UpHandler("boom");
  ExecReply reply = Call("boom", "7");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.error_type, "ValueError");
  EXPECT_EQ(reply.error_message, "bad input: 7");
  EXPECT_NE(reply.traceback.find("handlers.py"), std::string::npos) << reply.traceback;
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kHandlerError);
}

TEST_P(WarmPythonTest, UnencodableResultIsAResultError) {
  UpHandler("unencodable");
  ExecReply reply = Call("unencodable");
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.error_type, "ResultError");
}

TEST_P(WarmPythonTest, LoopPastDeadlineIsKilledAndTheFunctionServesOn) {
  UpHandler("spin");
  auto start = std::chrono::steady_clock::now();
  ExecReply reply = Call("spin");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kTimeout);
  EXPECT_EQ(reply.outcome.exit_code, 137);
  EXPECT_EQ(reply.stdout_data, "spinning\n") << "printed before the kill";
  UpHandler("echo");
  EXPECT_TRUE(Call("echo", "1").ok);
  EXPECT_EQ(Call("spin").outcome.status, core::OutcomeStatus::kTimeout)
      << "the same function, again";
}

TEST_P(WarmPythonTest, MemoryExhaustionIsAnOomKill) {
  UpHandler("hog", "");
  ExecReply reply = Call("hog");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kOom)
      << reply.error_type << " " << reply.error_message;
  EXPECT_TRUE(reply.outcome.oom_killed);
}

// A request's /tmp is bounded by its memory limit (128M here), and its pages count against
// it: filling /tmp ends in ENOSPC at the size or in an oom kill, never in 1 GiB written.
TEST_P(WarmPythonTest, TmpIsBoundedByTheRequestsMemory) {
  UpHandler("fill");
  ExecReply reply = Call("fill");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  if (reply.ok) {
    const nlohmann::json got = Result(reply);
    EXPECT_EQ(got.value("error", ""), "ENOSPC") << reply.result_json;
    EXPECT_GT(got.value("written", 0), 0) << "control: it wrote" << reply.result_json;
    EXPECT_LE(got.value("written", 0), 128 << 20) << reply.result_json;
  } else {
    EXPECT_EQ(reply.outcome.status, core::OutcomeStatus::kOom)
        << reply.error_type << " " << reply.error_message;
  }
}

TEST_P(WarmPythonTest, CrashIsReportedAsSignal) {
  UpHandler("segfault");
  ExecReply reply = Call("segfault");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  EXPECT_EQ(reply.outcome.signal, SIGSEGV);
  EXPECT_EQ(reply.error_type, "crashed");
}

TEST_P(WarmPythonTest, HandlerThatClosesStdoutStillAnswers) {
  UpHandler("close_stdout");
  ExecReply reply = Call("close_stdout");
  ASSERT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
  EXPECT_EQ(Result(reply), "still answered");
}

TEST_P(WarmPythonTest, RandomStateAndUuidDifferPerRequest) {
  UpHandler("unique");
  std::set<std::string> randoms, uuids;
  for (int i = 0; i < 5; ++i) {
    ExecReply reply = Call("unique");
    ASSERT_TRUE(reply.ok) << reply.error_message;
    nlohmann::json result = Result(reply);
    randoms.insert(result["random"].dump());
    uuids.insert(result["uuid"].get<std::string>());
  }
  EXPECT_EQ(randoms.size(), 5u);
  EXPECT_EQ(uuids.size(), 5u);
}

// A handler writes /tmp/x (and a file in tempfile's dir) and reads it back on every
// request; the next request finds /tmp empty again.
TEST_P(WarmPythonTest, EachRequestHasItsOwnEmptyTmp) {
  UpHandler("tmp");
  for (int i = 0; i < 3; ++i) {
    const std::string event = absl::StrCat("\"request ", i, "\"");
    ExecReply reply = Call("tmp", event);
    ASSERT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
    EXPECT_EQ(Result(reply)["x"], nlohmann::json::parse(event));
    EXPECT_EQ(Result(reply)["tmpdir"], "/tmp");
    EXPECT_EQ(Result(reply)["before"], nlohmann::json::array())
        << "request " << i << " saw an earlier request's files";
  }
}

// Two requests at once, each writing its own secret into /tmp: each sees only its own
// (the control that the write happened), never the other's, though both were alive.
TEST_P(WarmPythonTest, ConcurrentRequestsCannotSeeEachOthersTmp) {
  UpHandler("peek");
  std::promise<ExecReply> first, second;
  ExecRequest slow;
  slow.function = "peek";
  slow.event_json = R"({"token": "slow", "sleep": 0.8})";
  service_->Exec(slow, [&](ExecReply reply) { first.set_value(reply); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ExecRequest fast = slow;
  fast.event_json = R"({"token": "fast", "sleep": 0})";
  service_->Exec(fast, [&](ExecReply reply) { second.set_value(reply); });
  ExecReply a = first.get_future().get();
  ExecReply b = second.get_future().get();
  ASSERT_TRUE(a.ok && b.ok) << a.error_message << b.error_message;
  for (const auto& [reply, token] : {std::pair{&a, "slow"}, std::pair{&b, "fast"}}) {
    nlohmann::json result = Result(*reply);
    EXPECT_EQ(result["own"], token) << "control: a request reads its own files";
    EXPECT_EQ(result["before"], nlohmann::json::array()) << reply->result_json;
    EXPECT_EQ(result["after"], nlohmann::json::array({absl::StrCat("secret-", token)}))
        << reply->result_json;
  }
}

// Its spare made a user and mount namespace of its own (the /tmp tests above are the
// control); the request can make none within it: the sandbox's seccomp lets the call
// through, the namespace's limit of 0 refuses it.
TEST_P(WarmPythonTest, ARequestCannotMakeANamespaceOfItsOwn) {
  UpHandler("nest");
  ExecReply reply = Call("nest");
  ASSERT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message;
  EXPECT_EQ(Result(reply), "ENOSPC");
}

TEST_P(WarmPythonTest, RequestCannotSignalTheZygote) {
  UpHandler("kill_parent");
  ExecReply reply = Call("kill_parent");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  EXPECT_EQ(Result(reply), "refused: PermissionError");
  // The zygote survived: the next request runs on it.
  EXPECT_TRUE(Call("kill_parent").ok);
}

TEST_P(WarmPythonTest, RequestSeesOnlyItsOwnFds) {
  UpHandler("fds");
  ExecReply reply = Call("fds");
  ASSERT_TRUE(reply.ok) << reply.error_message;
  // stdin, stdout, stderr, its channel to the supervisor, and the listing's own fd.
  EXPECT_LE(Result(reply).size(), 5u) << reply.result_json;
}

// On cgroup v1 a spare writes itself into its request cgroup (wire Join); the supervisor
// says once per function when one did not and it had to move the spare instead.
TEST_P(WarmPythonTest, SparesJoinTheirRequestCgroupsThemselves) {
  if (!std::filesystem::exists("/sys/fs/cgroup/memory/cgroup.procs") ||
      std::filesystem::exists("/sys/fs/cgroup/memory/cgroup.controllers")) {
    GTEST_SKIP() << "a spare joins by itself on cgroup v1 only";
  }
  ::testing::internal::CaptureStderr();
  UpHandler("cgroups");
  for (int i = 0; i < 3; ++i) {
    ExecReply reply = Call("cgroups");
    ASSERT_TRUE(reply.ok) << reply.error_message;
    // Its own request cgroup in the memory, pids and cpu hierarchies ("ID:controllers:path").
    int in_request_cgroup = 0;
    for (const std::string line : Result(reply)) {
      const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (fields.size() != 3) continue;
      const std::vector<std::string> controllers = absl::StrSplit(fields[1], ',');
      for (const char* wanted : {"memory", "pids", "cpu"}) {
        if (std::find(controllers.begin(), controllers.end(), wanted) == controllers.end())
          continue;
        EXPECT_NE(fields[2].find("/request-"), std::string::npos) << line;
        ++in_request_cgroup;
      }
    }
    EXPECT_EQ(in_request_cgroup, 3) << reply.result_json;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("did not join its cgroup"), std::string::npos) << log;
}

TEST_P(WarmPythonTest, CancelKillsTheRequest) {
  UpHandler("sleep");
  ASSERT_TRUE(Call("sleep", "0").ok);
  std::vector<int> before = DescendantsOf(OurAgents());
  std::promise<ExecReply> promise;
  ExecRequest request;
  request.function = "sleep";
  request.event_json = "30";
  auto handle = service_->Exec(request, [&](ExecReply reply) { promise.set_value(reply); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  handle->Cancel();
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  EXPECT_TRUE(absl::IsCancelled(future.get().status));
  // The sleeping request is gone: only the zygote's spares are left below it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(DescendantsOf(OurAgents()).size(), before.size() + 1);
}

TEST_P(WarmPythonTest, ZygoteKilledFromOutsideGivesATypedErrorThenRewarms) {
  UpHandler("sleep");
  ASSERT_TRUE(Call("sleep", "0").ok);
  std::promise<ExecReply> promise;
  ExecRequest request;
  request.function = "sleep";
  request.event_json = "1";
  service_->Exec(request, [&](ExecReply reply) { promise.set_value(reply); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<int> agents = OurAgents();
  ASSERT_EQ(agents.size(), 1u);
  kill(agents[0], SIGKILL);
  ExecReply in_flight = promise.get_future().get();
  EXPECT_TRUE(absl::IsUnavailable(in_flight.status)) << in_flight.status;
  ExecReply after = Call("sleep", "0");
  ASSERT_TRUE(after.status.ok()) << after.status;
  EXPECT_TRUE(after.ok);
}

TEST_P(WarmPythonTest, ImportErrorIsReportedWithTheAgentsOutput) {
  WriteCode("broken.py", "import no_such_module_anywhere\n");
  Up("name = \"broken\"\nentry = \"broken.py:main\"\n");
  ExecReply reply = Call("broken");
  EXPECT_TRUE(absl::IsFailedPrecondition(reply.status)) << reply.status;
  EXPECT_NE(reply.status.message().find("no_such_module_anywhere"), std::string::npos)
      << reply.status;
}

TEST_P(WarmPythonTest, ThousandRequestsAtOnce) {
  UpHandler("echo");
  constexpr int kRequests = 1000;
  std::vector<std::promise<ExecReply>> promises(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    ExecRequest request;
    request.function = "echo";
    request.event_json = absl::StrCat(i);
    service_->Exec(request, [&promises, i](ExecReply reply) { promises[i].set_value(reply); });
  }
  // Every reply is waited for, even after a failure: the callbacks still to come write
  // into `promises`, which must outlive them.
  for (int i = 0; i < kRequests; ++i) {
    ExecReply reply = promises[i].get_future().get();
    EXPECT_TRUE(reply.ok) << i << ": " << reply.status << " " << reply.error_message;
    if (reply.ok) {
      EXPECT_EQ(Result(reply), i);
    }
  }
}

TEST_P(WarmPythonTest, RuntimePoolRunsScriptsByDigest) {
  Up("name = \"pool\"\npool = true\npreload = [\"json\"]\n");
  auto first = service_->PutScript("def handler(event):\n    return ['first', event]\n");
  auto second = service_->PutScript("def handler(event):\n    return ['second', event]\n");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(Result(Call("pool", "1", *first)), nlohmann::json::parse(R"(["first", 1])"));
  EXPECT_EQ(Result(Call("pool", "2", *second)), nlohmann::json::parse(R"(["second", 2])"));
  EXPECT_TRUE(absl::IsNotFound(Call("pool", "3", "sha256:" + std::string(64, 'a')).status));
  EXPECT_TRUE(absl::IsInvalidArgument(Call("pool", "3").status)) << "a pool call names a script";
}

// A pool compiles a script once: the first child sends its bytecode back before running it,
// and later children load that instead. The compiler's SyntaxWarning is the witness: it is
// printed only where the source is compiled.
TEST_P(WarmPythonTest, RuntimePoolCompilesAScriptOnce) {
  Up("name = \"pool\"\npool = true\n");
  auto script = service_->PutScript(
      "assert (1, 'always true')\n"
      "def handler(event):\n"
      "    if event == 'raise':\n"
      "        raise ValueError('from the handler')\n"
      "    return [event, handler.__code__.co_filename]\n");
  ASSERT_TRUE(script.ok()) << script.status();
  const nlohmann::json filename = *script + ".py";
  ExecReply first = Call("pool", "1", *script);
  ASSERT_TRUE(first.ok) << first.status << " " << first.error_message;
  EXPECT_EQ(Result(first), nlohmann::json::array({1, filename}));
  EXPECT_TRUE(absl::StrContains(first.stderr_data, "SyntaxWarning")) << first.stderr_data;
  for (int i = 2; i <= 3; ++i) {
    ExecReply again = Call("pool", absl::StrCat(i), *script);
    ASSERT_TRUE(again.ok) << again.status << " " << again.error_message;
    EXPECT_EQ(Result(again), nlohmann::json::array({i, filename}));
    EXPECT_FALSE(absl::StrContains(again.stderr_data, "SyntaxWarning")) << again.stderr_data;
  }
  // Loaded from bytecode, its tracebacks still name the script.
  ExecReply raised = Call("pool", "\"raise\"", *script);
  EXPECT_FALSE(raised.ok);
  EXPECT_EQ(raised.error_type, "ValueError");
  EXPECT_TRUE(absl::StrContains(raised.traceback, *script + ".py")) << raised.traceback;
  // Another script is compiled on its own.
  auto other = service_->PutScript("assert (2, 'also true')\ndef handler(event):\n    return 2\n");
  ASSERT_TRUE(other.ok());
  ExecReply second_script = Call("pool", "0", *other);
  EXPECT_EQ(Result(second_script), 2);
  EXPECT_TRUE(absl::StrContains(second_script.stderr_data, "SyntaxWarning"));
}

// The learned prefault: the first requests' children report the pages they wrote, and
// spares forked after that take those pages before their request arrives, so the handler
// itself takes far fewer page faults. The first request, on a spare forked before anything
// was learned, is the control: the same work faulted then.
TEST_P(WarmPythonTest, LaterRequestsFindTheirPagesAlreadyTaken) {
  WriteCode("faults.py",
            "import resource\n"
            "TABLE = {str(i): [i] * 4 for i in range(20000)}  # warm memory the handler reads\n"
            "def handler(event):\n"
            "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    total = sum(len(v) for k, v in TABLE.items() if k.endswith('7'))\n"
            "    made = [str(i) * 3 for i in range(3000)]\n"
            "    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    return [after - before, total, len(made)]\n");
  Up("name = \"faults\"\nentry = \"faults.py:handler\"\nspares = 1\n");
  std::vector<int64_t> faults;
  for (int i = 0; i < 8; ++i) {
    ExecReply reply = Call("faults");
    ASSERT_TRUE(reply.ok) << reply.status << " " << reply.error_message << reply.traceback;
    const nlohmann::json result = Result(reply);
    EXPECT_EQ(result[1], 8000);
    faults.push_back(result[0].get<int64_t>());
    // Time for the next spare to be forked and take its pages: a Run that is already
    // waiting when the Prefault arrives goes first (the spare skips the prefault).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(faults[0], 50) << "the handler's work faults when nothing was taken ahead";
  std::vector<int64_t> later(faults.begin() + 4, faults.end());
  std::sort(later.begin(), later.end());
  EXPECT_LT(later[later.size() / 2] * 4, faults[0])
      << "faults per request: " << absl::StrJoin(faults, ", ");
  RecordProperty("faults_per_request", absl::StrJoin(faults, ", "));
}

INSTANTIATE_TEST_SUITE_P(OwnSandboxAndTree, WarmPythonTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "ZygoteTree" : "OwnSandbox";
                         });

}  // namespace
}  // namespace zygo::supervisor
