// The C++ SDK against a real supervisor: every call of client.h, and each error it maps
// (an unknown function, a bad spec, nobody serving the socket), and the requests that ran
// and failed (a raise, a deadline, a memory limit) as Results whose ok is false.
#include "sdk/cpp/zygo/client.h"

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "testing/harness.h"
#include "testing/supervisor_process.h"

namespace zygo::sdk {
namespace {

constexpr char kHandler[] = R"(import time


def main(event):
    if event == "raise":
        raise KeyError("no such thing")
    if event == "sleep":
        time.sleep(30)
    if event == "hold":
        time.sleep(1)
    if event == "hog":
        blob = b"x" * (512 << 20)
        return len(blob)
    print("called with", event)
    return {"echo": event}
)";

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { StartSupervisor({}); }

  void StartSupervisor(std::vector<std::string> args) {
    client_.reset();
    supervisor_.reset();
    testing::SupervisorProcess::Options options;
    options.binary = testing::Runfile("supervisor/supervisor");
    options.args = std::move(args);
    absl::StatusOr<std::unique_ptr<testing::SupervisorProcess>> started =
        testing::SupervisorProcess::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    supervisor_ = *std::move(started);
    std::ofstream(supervisor_->WorkDir() + "/handler.py") << kHandler;
    client_ = std::make_unique<Client>(supervisor_->http_socket());
  }

  absl::StatusOr<Function> UpSpec(const std::string& toml) {
    return client_->Up(toml, supervisor_->WorkDir(), "spec.toml");
  }

  std::unique_ptr<testing::SupervisorProcess> supervisor_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, HealthUpExecListDown) {
  EXPECT_TRUE(client_->Health().ok());
  absl::StatusOr<Function> up = UpSpec(
      "name = \"echo\"\nentry = \"handler.py:main\"\n[limits]\nmemory = \"64M\"\n"
      "timeout = \"3s\"\n");
  ASSERT_TRUE(up.ok()) << up.status() << supervisor_->LogTail();
  EXPECT_EQ(up->runtime, "python");

  absl::StatusOr<Result> result = client_->Exec("echo", R"("hi")");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(result->result_json, R"({"echo":"hi"})");
  EXPECT_EQ(result->stdout_data, "called with hi\n");
  EXPECT_EQ(result->status, "ok");

  absl::StatusOr<Result> raised = client_->Exec("echo", R"("raise")");
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_FALSE(raised->ok);
  EXPECT_EQ(raised->error_type, "KeyError");
  EXPECT_TRUE(absl::StrContains(raised->traceback, "handler.py")) << raised->traceback;

  absl::StatusOr<Result> late = client_->Exec("echo", R"("sleep")");
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->ok);
  EXPECT_EQ(late->status, "timeout");
  EXPECT_TRUE(late->timed_out);

  absl::StatusOr<Result> hog = client_->Exec("echo", R"("hog")");
  ASSERT_TRUE(hog.ok()) << hog.status();
  EXPECT_FALSE(hog->ok);
  EXPECT_EQ(hog->status, "oom");
  EXPECT_TRUE(hog->oom_killed);

  absl::StatusOr<std::vector<Function>> list = client_->List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name, "echo");
  EXPECT_GE((*list)[0].requests, 4);

  ASSERT_TRUE(client_->Down("echo").ok());
  absl::StatusOr<Result> gone = client_->Exec("echo", R"("hi")");
  EXPECT_TRUE(absl::IsNotFound(gone.status())) << gone.status();
}

TEST_F(ClientTest, ScriptsRunInPythonAndNodePools) {
  ASSERT_TRUE(UpSpec("name = \"py-pool\"\npool = true\n").ok()) << supervisor_->LogTail();
  ASSERT_TRUE(UpSpec("name = \"js-pool\"\nruntime = \"node\"\npool = true\n").ok())
      << supervisor_->LogTail();

  absl::StatusOr<Result> py =
      client_->RunScript("py-pool", "def handler(event):\n    return event * 2\n", "21");
  ASSERT_TRUE(py.ok()) << py.status();
  EXPECT_EQ(py->result_json, "42") << py->error_message;

  const std::string js = "function handler(event) { return { doubled: event * 2 }; }\n";
  absl::StatusOr<std::string> digest = client_->PutScript(js);
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_TRUE(absl::StartsWith(*digest, "sha256:")) << *digest;
  absl::StatusOr<std::string> again = client_->PutScript(js);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *digest);
  absl::StatusOr<Result> node = client_->ExecScript("js-pool", *digest, "5");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->result_json, R"({"doubled":10})") << node->error_message;

  absl::StatusOr<Result> unknown =
      client_->ExecScript("js-pool", "sha256:" + std::string(64, '0'), "1");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
}

TEST_F(ClientTest, ErrorsAreTyped) {
  absl::StatusOr<Result> unknown = client_->Exec("nobody", "1");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  absl::StatusOr<Function> bad =
      UpSpec("name = \"bad\"\nentry = \"handler.py:main\"\n[limits]\nmemory = \"12Q\"\n");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "limits.memory")) << bad.status();

  Client nobody(supervisor_->dir() + "/nobody.sock");
  absl::Status health = nobody.Health();
  EXPECT_TRUE(absl::IsUnavailable(health)) << health;
}

// One request runs and one waits; the others find the queue full (HTTP 429).
TEST_F(ClientTest, AFullQueueIsResourceExhausted) {
  ASSERT_NO_FATAL_FAILURE(StartSupervisor({"--workers", "1", "--max-queued", "1"}));
  ASSERT_TRUE(UpSpec("name = \"slow\"\nentry = \"handler.py:main\"\n").ok())
      << supervisor_->LogTail();
  // The control: alone, a request is served.
  absl::StatusOr<Result> alone = client_->Exec("slow", R"("hi")");
  ASSERT_TRUE(alone.ok() && alone->ok) << alone.status();
  constexpr int kCalls = 4;
  std::vector<absl::Status> statuses(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      Client own(supervisor_->http_socket());  // one connection per thread
      absl::StatusOr<Result> result = own.Exec("slow", R"("hold")");
      statuses[i] = result.status();
    });
    absl::SleepFor(absl::Milliseconds(100));  // the first is running before the rest come
  }
  for (std::thread& caller : callers) caller.join();
  int served = 0, refused = 0;
  for (const absl::Status& status : statuses) {
    if (status.ok()) ++served;
    if (absl::IsResourceExhausted(status)) ++refused;
  }
  EXPECT_GE(served, 1);
  EXPECT_GE(refused, 1) << "no call found the queue full";
  EXPECT_EQ(served + refused, kCalls);
}

}  // namespace
}  // namespace zygo::sdk
