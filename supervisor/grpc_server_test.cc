// GrpcServer over a real unix socket with a real gRPC client, against a fake Service whose
// Exec replies from its own thread after a delay and records cancellations.
#include "supervisor/grpc_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <latch>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"

namespace zygo::supervisor {
namespace {

namespace v1 = ::zygo::v1;
using ::testing::HasSubstr;

class FakeService final : public Service {
 public:
  using Responder = std::function<ExecReply(const ExecRequest&)>;

  explicit FakeService(absl::Duration exec_delay)
      : delay_(absl::ToChronoMilliseconds(exec_delay)), worker_([this] { Run(); }) {}

  ~FakeService() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  // Set before the first Exec.
  void set_responder(Responder responder) { responder_ = std::move(responder); }

  int cancels() {
    std::lock_guard lock(mu_);
    return cancels_;
  }

  ExecRequest last_request() {
    std::lock_guard lock(mu_);
    return last_request_;
  }

  absl::StatusOr<FunctionInfo> Up(const std::string& spec_toml, const std::string& origin,
                                  const std::string& base_dir) override {
    if (spec_toml.empty()) return absl::InvalidArgumentError(origin + ": empty spec");
    FunctionInfo info = SampleInfo();
    info.spec_path = base_dir + "/" + origin;
    info.entry = spec_toml;
    return info;
  }

  absl::Status Down(const std::string& name) override {
    if (name == "hello") return absl::OkStatus();
    return absl::NotFoundError("no function named " + name);
  }

  std::vector<FunctionInfo> List() override {
    FunctionInfo pool = SampleInfo();
    pool.name = "py";
    pool.pool = true;
    pool.entry = "";
    return {SampleInfo(), pool};
  }

  absl::StatusOr<std::string> PutScript(const std::string& source) override {
    if (source.empty()) return absl::InvalidArgumentError("empty script");
    return "sha256:" + std::to_string(source.size());
  }

  std::shared_ptr<RequestHandle> Exec(ExecRequest request, ExecCallback done) override;

  static FunctionInfo SampleInfo() {
    FunctionInfo info;
    info.name = "hello";
    info.image = "host";
    info.runtime = Runtime::kPython;
    info.entry = "hello.py:handler";
    info.state = FunctionState::kWarm;
    info.requests = 7;
    info.memory_bytes = 256 << 20;
    info.timeout_ms = 30000;
    info.cold_after_ms = 600000;
    info.spec_path = "/srv/hello.toml";
    return info;
  }

 private:
  struct Pending {
    ExecRequest request;
    ExecCallback done;
    std::chrono::steady_clock::time_point due;
    bool cancelled = false;
  };

  class Handle final : public RequestHandle {
   public:
    Handle(FakeService* fake, std::shared_ptr<Pending> pending)
        : fake_(fake), pending_(std::move(pending)) {}
    void Cancel() override { fake_->Cancel(*pending_); }

   private:
    FakeService* fake_;
    std::shared_ptr<Pending> pending_;
  };

  void Cancel(Pending& pending) {
    {
      std::lock_guard lock(mu_);
      ++cancels_;
      pending.cancelled = true;
    }
    cv_.notify_all();
  }

  // Replies to every request that is due or cancelled, from this one thread.
  void Run();

  const std::chrono::milliseconds delay_;
  Responder responder_ = [](const ExecRequest& request) {
    ExecReply reply;
    reply.ok = true;
    reply.result_json = request.event_json;
    return reply;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<Pending>> pending_;
  bool stopping_ = false;
  int cancels_ = 0;
  ExecRequest last_request_;
  std::thread worker_;
};

std::shared_ptr<RequestHandle> FakeService::Exec(ExecRequest request, ExecCallback done) {
  auto pending = std::make_shared<Pending>();
  pending->request = std::move(request);
  pending->done = std::move(done);
  pending->due = std::chrono::steady_clock::now() + delay_;
  {
    std::lock_guard lock(mu_);
    last_request_ = pending->request;
    pending_.push_back(pending);
  }
  cv_.notify_all();
  return std::make_shared<Handle>(this, pending);
}

void FakeService::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    std::vector<std::shared_ptr<Pending>> ready;
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::hours(1);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (stopping_ || (*it)->cancelled || (*it)->due <= now) {
        ready.push_back(*it);
        it = pending_.erase(it);
      } else {
        next = std::min(next, (*it)->due);
        ++it;
      }
    }
    if (ready.empty()) {
      if (stopping_) return;
      cv_.wait_until(lock, next);
      continue;
    }
    lock.unlock();
    for (const auto& pending : ready) {
      ExecReply reply;
      if (pending->cancelled || stopping_) {
        reply.status = absl::CancelledError("request cancelled");
      } else {
        reply = responder_(pending->request);
      }
      pending->done(std::move(reply));
    }
    lock.lock();
  }
}

// TEST_TMPDIR can be longer than sun_path allows, so the sockets live there but are dialled
// through a short symlink to it, inside a fresh private directory under /tmp.
std::string ShortDirFor(const std::string& dir, std::string* scratch) {
  char tmpl[] = "/tmp/zygo-grpc-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  *scratch = tmpl;
  std::string link = *scratch + "/d";
  EXPECT_EQ(symlink(dir.c_str(), link.c_str()), 0) << link;
  return link;
}

class GrpcServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    scratch_ = new std::string;
    dir_ = new std::string(ShortDirFor(tmp != nullptr ? tmp : "/tmp", scratch_));
  }
  static void TearDownTestSuite() {
    unlink(dir_->c_str());
    rmdir(scratch_->c_str());
    delete dir_;
    delete scratch_;
  }

  std::string SocketPath() const {
    return absl::StrCat(*dir_, "/", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                        ".sock");
  }

  void StartServer(absl::Duration exec_delay) {
    fake_ = std::make_unique<FakeService>(exec_delay);
    path_ = SocketPath();
    absl::StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Listen(path_, fake_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = NewStub(path_);
  }

  static std::unique_ptr<v1::Zygo::Stub> NewStub(const std::string& path) {
    return v1::Zygo::NewStub(
        grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
  }

  static inline std::string* dir_ = nullptr;
  static inline std::string* scratch_ = nullptr;
  std::string path_;
  // Destroyed in reverse: the server shuts down while the fake still replies.
  std::unique_ptr<FakeService> fake_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<v1::Zygo::Stub> stub_;
};

TEST_F(GrpcServerTest, UpReturnsEveryFieldOfFunctionInfo) {
  StartServer(absl::ZeroDuration());
  grpc::ClientContext ctx;
  v1::UpRequest request;
  request.set_spec_toml("main.py:run");
  request.set_origin("hello.toml");
  request.set_base_dir("/srv");
  v1::FunctionInfo info;
  grpc::Status status = stub_->Up(&ctx, request, &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.name(), "hello");
  EXPECT_EQ(info.image(), "host");
  EXPECT_EQ(info.runtime(), "python");
  EXPECT_EQ(info.entry(), "main.py:run");
  EXPECT_FALSE(info.pool());
  EXPECT_EQ(info.state(), "warm");
  EXPECT_EQ(info.requests(), 7);
  EXPECT_EQ(info.memory_bytes(), 256 << 20);
  EXPECT_EQ(info.timeout_ms(), 30000);
  EXPECT_EQ(info.cold_after_ms(), 600000);
  EXPECT_EQ(info.spec_path(), "/srv/hello.toml");
}

TEST_F(GrpcServerTest, UpErrorKeepsCodeAndMessage) {
  StartServer(absl::ZeroDuration());
  grpc::ClientContext ctx;
  v1::UpRequest request;
  request.set_origin("bad.toml");
  v1::FunctionInfo info;
  grpc::Status status = stub_->Up(&ctx, request, &info);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "bad.toml: empty spec");
}

TEST_F(GrpcServerTest, DownListPutScriptHealth) {
  StartServer(absl::ZeroDuration());
  {
    grpc::ClientContext ctx;
    v1::DownRequest request;
    request.set_name("hello");
    v1::DownReply reply;
    EXPECT_TRUE(stub_->Down(&ctx, request, &reply).ok());
  }
  {
    grpc::ClientContext ctx;
    v1::DownRequest request;
    request.set_name("nope");
    v1::DownReply reply;
    grpc::Status status = stub_->Down(&ctx, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "no function named nope");
  }
  {
    grpc::ClientContext ctx;
    v1::ListReply reply;
    ASSERT_TRUE(stub_->List(&ctx, v1::ListRequest(), &reply).ok());
    ASSERT_EQ(reply.functions_size(), 2);
    EXPECT_EQ(reply.functions(0).name(), "hello");
    EXPECT_EQ(reply.functions(0).entry(), "hello.py:handler");
    EXPECT_EQ(reply.functions(1).name(), "py");
    EXPECT_TRUE(reply.functions(1).pool());
  }
  {
    grpc::ClientContext ctx;
    v1::PutScriptRequest request;
    request.set_source(std::string("print(1)\n\0tail", 14));
    v1::PutScriptReply reply;
    ASSERT_TRUE(stub_->PutScript(&ctx, request, &reply).ok());
    EXPECT_EQ(reply.digest(), "sha256:14");
  }
  {
    grpc::ClientContext ctx;
    v1::HealthReply reply;
    ASSERT_TRUE(stub_->Health(&ctx, v1::HealthRequest(), &reply).ok());
    EXPECT_TRUE(reply.ok());
  }
}

ExecReply FullReply() {
  ExecReply reply;
  reply.ok = false;
  reply.result_json = "{\"x\":1}";
  reply.error_type = "ValueError";
  reply.error_message = "bad value";
  reply.traceback = "Traceback (most recent call last):\n...";
  reply.stdout_data = std::string("out\0put", 7);
  reply.stderr_data = "err";
  reply.stdout_truncated = true;
  reply.stderr_truncated = false;
  reply.outcome.status = core::OutcomeStatus::kHandlerError;
  reply.outcome.exit_code = 3;
  reply.outcome.signal = 9;
  reply.outcome.timed_out = true;
  reply.outcome.oom_killed = true;
  reply.outcome.peak_rss_kb = 12345;
  reply.outcome.wall_ms = 12.5;
  reply.timings = {.fork_us = 1, .admit_us = 2, .run_us = 3, .reply_us = 4, .total_us = 10};
  return reply;
}

TEST_F(GrpcServerTest, ExecRequestAndReplyFieldsSurviveTheTrip) {
  StartServer(absl::Milliseconds(20));
  fake_->set_responder([](const ExecRequest&) { return FullReply(); });
  grpc::ClientContext ctx;
  v1::ExecRequest request;
  request.set_function("py");
  request.set_script_digest("sha256:abc");
  request.set_event_json("{\"n\":2}");
  request.set_stdin_data(std::string("in\0put", 6));
  v1::ExecReply reply;
  grpc::Status status = stub_->Exec(&ctx, request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();

  ExecRequest seen = fake_->last_request();
  EXPECT_EQ(seen.function, "py");
  EXPECT_EQ(seen.script_digest, "sha256:abc");
  EXPECT_EQ(seen.event_json, "{\"n\":2}");
  EXPECT_EQ(seen.stdin_data, std::string("in\0put", 6));

  EXPECT_FALSE(reply.ok());
  EXPECT_EQ(reply.result_json(), "{\"x\":1}");
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().type(), "ValueError");
  EXPECT_EQ(reply.error().message(), "bad value");
  EXPECT_EQ(reply.error().traceback(), "Traceback (most recent call last):\n...");
  EXPECT_EQ(reply.stdout(), std::string("out\0put", 7));
  EXPECT_EQ(reply.stderr(), "err");
  EXPECT_TRUE(reply.stdout_truncated());
  EXPECT_FALSE(reply.stderr_truncated());
  EXPECT_EQ(reply.outcome().status(), "handler_error");
  EXPECT_EQ(reply.outcome().exit_code(), 3);
  EXPECT_EQ(reply.outcome().signal(), 9);
  EXPECT_TRUE(reply.outcome().timed_out());
  EXPECT_TRUE(reply.outcome().oom_killed());
  EXPECT_EQ(reply.outcome().peak_rss_kb(), 12345);
  EXPECT_DOUBLE_EQ(reply.outcome().wall_ms(), 12.5);
  EXPECT_EQ(reply.timings_us().fork(), 1);
  EXPECT_EQ(reply.timings_us().admit(), 2);
  EXPECT_EQ(reply.timings_us().run(), 3);
  EXPECT_EQ(reply.timings_us().reply(), 4);
  EXPECT_EQ(reply.timings_us().total(), 10);
}

TEST_F(GrpcServerTest, SuccessfulExecHasNoError) {
  StartServer(absl::Milliseconds(5));
  grpc::ClientContext ctx;
  v1::ExecRequest request;
  request.set_function("hello");
  request.set_event_json("[1,2]");
  v1::ExecReply reply;
  ASSERT_TRUE(stub_->Exec(&ctx, request, &reply).ok());
  EXPECT_TRUE(reply.ok());
  EXPECT_EQ(reply.result_json(), "[1,2]");
  EXPECT_FALSE(reply.has_error());
}

TEST_F(GrpcServerTest, ExecStatusBecomesTheRpcStatus) {
  StartServer(absl::Milliseconds(5));
  fake_->set_responder([](const ExecRequest& request) {
    ExecReply reply;
    reply.status = absl::NotFoundError("no function named " + request.function);
    reply.ok = true;  // must not reach the client: a failed call carries no message
    return reply;
  });
  grpc::ClientContext ctx;
  v1::ExecRequest request;
  request.set_function("ghost");
  v1::ExecReply reply;
  grpc::Status status = stub_->Exec(&ctx, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no function named ghost");
  EXPECT_FALSE(reply.ok());
}

// The event limit is checked on the Exec's fields, so a caller past it gets the words HTTP
// and the core use, and the service never sees the request. Control: both fields at the
// limit (one message of twice its size) reach the service whole.
TEST_F(GrpcServerTest, AnEventOverTheLimitIsResourceExhaustedInTheEventsWords) {
  StartServer(absl::ZeroDuration());
  fake_->set_responder([](const ExecRequest& request) {
    ExecReply reply;
    reply.ok = true;
    reply.result_json =
        absl::StrCat("[", request.event_json.size(), ",", request.stdin_data.size(), "]");
    return reply;
  });
  const std::string over(kMaxEventBytes + 1, 'e');
  for (bool as_stdin : {false, true}) {
    grpc::ClientContext ctx;
    v1::ExecRequest request;
    request.set_function("big");
    as_stdin ? request.set_stdin_data(over) : request.set_event_json(over);
    v1::ExecReply reply;
    grpc::Status status = stub_->Exec(&ctx, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << as_stdin;
    EXPECT_EQ(status.error_message(), "event is 16777217 bytes; the limit is 16777216 bytes");
  }
  EXPECT_EQ(fake_->last_request().function, "");

  grpc::ClientContext ctx;
  v1::ExecRequest request;
  request.set_function("big");
  request.set_event_json(std::string(kMaxEventBytes, 'e'));
  request.set_stdin_data(std::string(kMaxEventBytes, 's'));
  v1::ExecReply reply;
  grpc::Status status = stub_->Exec(&ctx, request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.result_json(), "[16777216,16777216]");
}

TEST_F(GrpcServerTest, ClientDeadlineCancelsTheRequest) {
  StartServer(absl::Seconds(30));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v1::ExecRequest request;
  request.set_function("slow");
  v1::ExecReply reply;
  absl::Time start = absl::Now();
  grpc::Status status = stub_->Exec(&ctx, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));

  absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (fake_->cancels() == 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_GE(fake_->cancels(), 1);
}

TEST_F(GrpcServerTest, ConcurrentExecsAreAllAnswered) {
  constexpr int kCalls = 200;
  const absl::Duration delay = absl::Milliseconds(300);
  StartServer(delay);
  struct Call {
    grpc::ClientContext ctx;
    v1::ExecRequest request;
    v1::ExecReply reply;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::latch done(kCalls);
  absl::Time start = absl::Now();
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    call->request.set_function("hello");
    call->request.set_event_json(std::to_string(i));
    Call* raw = call.get();
    calls.push_back(std::move(call));
    stub_->async()->Exec(&raw->ctx, &raw->request, &raw->reply, [raw, &done](grpc::Status s) {
      raw->status = std::move(s);
      done.count_down();
    });
  }
  done.wait();
  // One after another they would take kCalls * delay = 60 s.
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->status.ok()) << i << ": " << calls[i]->status.error_message();
    EXPECT_EQ(calls[i]->reply.result_json(), std::to_string(i));
  }
  EXPECT_EQ(fake_->cancels(), 0);
}

TEST_F(GrpcServerTest, SocketIsPrivateAndRemovedOnShutdown) {
  StartServer(absl::ZeroDuration());
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  server_->Shutdown();
  server_->Wait();
  EXPECT_NE(lstat(path_.c_str(), &st), 0);
}

TEST_F(GrpcServerTest, ReplacesStaleSocket) {
  path_ = SocketPath();
  // A socket file with no listener behind it: what a killed server leaves.
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);

  FakeService fake(absl::ZeroDuration());
  absl::StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Listen(path_, &fake);
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::ClientContext ctx;
  v1::HealthReply reply;
  EXPECT_TRUE(NewStub(path_)->Health(&ctx, v1::HealthRequest(), &reply).ok());
}

TEST_F(GrpcServerTest, KeepsALiveServersSocket) {
  StartServer(absl::ZeroDuration());
  FakeService other(absl::ZeroDuration());
  absl::StatusOr<std::unique_ptr<GrpcServer>> second = GrpcServer::Listen(path_, &other);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  grpc::ClientContext ctx;
  v1::HealthReply reply;
  EXPECT_TRUE(NewStub(path_)->Health(&ctx, v1::HealthRequest(), &reply).ok());
}

TEST_F(GrpcServerTest, KeepsAFileThatIsNotASocket) {
  path_ = SocketPath();
  std::ofstream(path_) << "precious";
  FakeService fake(absl::ZeroDuration());
  absl::StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Listen(path_, &fake);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition) << server.status();
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("not a socket"));
  std::string content;
  std::ifstream(path_) >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(GrpcServerTest, RejectsAPathTooLongForSunPath) {
  FakeService fake(absl::ZeroDuration());
  absl::StatusOr<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Listen(*dir_ + "/" + std::string(120, 'x'), &fake);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << server.status();
}

}  // namespace
}  // namespace zygo::supervisor
