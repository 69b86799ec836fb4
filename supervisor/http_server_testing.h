// What the HttpServer tests share: a fake Service with canned functions, and a tiny
// POSIX-socket client that checks what goes over the wire.
#ifndef ZYGO_SUPERVISOR_HTTP_SERVER_TESTING_H_
#define ZYGO_SUPERVISOR_HTTP_SERVER_TESTING_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/connection_limits.h"
#include "supervisor/http_server.h"
#include "supervisor/service.h"

namespace zygo::supervisor {

// Replies to Exec from one worker thread, by function name:
//   "echo"      after 20 ms: ok, result = the event, stdout = stdin
//   "status-N"  after 5 ms: a failed reply with absl code N
//   "slow"      only when cancelled (or after 30 s)
//   "deaf"      after 300 ms, whether cancelled or not
//   "gate"      once `gate_target` gate requests are waiting, all at once (event echoed)
class FakeService : public Service {
 public:
  FakeService() : worker_([this] { Work(); }) {}
  ~FakeService() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  absl::StatusOr<FunctionInfo> Up(const std::string& spec, const std::string& origin,
                                  const std::string& base_dir) override {
    std::lock_guard<std::mutex> lock(mu_);
    up_calls.push_back({spec, origin, base_dir});
    if (spec == "fail") return absl::InvalidArgumentError("request:1: fail");
    FunctionInfo info;
    info.name = "hello";
    info.spec_path = origin;
    return info;
  }
  absl::Status Down(const std::string& name) override {
    if (name == "missing") return absl::NotFoundError("no function named missing");
    return absl::OkStatus();
  }
  std::vector<FunctionInfo> List() override {
    FunctionInfo info;
    info.name = "listed";
    info.state = FunctionState::kWarm;
    return {info};
  }
  absl::StatusOr<std::string> PutScript(const std::string& source) override {
    std::lock_guard<std::mutex> lock(mu_);
    script_sizes.push_back(source.size());
    return "sha256:" + std::string(64, 'a');
  }

  std::shared_ptr<RequestHandle> Exec(ExecRequest request, ExecCallback done) override;

  // Waits (up to 10 s) for `pred` over the service's state.
  bool WaitFor(const std::function<bool()>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), pred);
  }
  void SetGateTarget(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    gate_target = n;
  }
  std::vector<ExecRequest> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  struct UpCall {
    std::string spec, origin, base_dir;
  };
  std::vector<UpCall> up_calls;      // guarded by mu_
  std::vector<size_t> script_sizes;  // guarded by mu_
  std::vector<uint64_t> cancelled;   // guarded by mu_
  int execs = 0;                     // Exec calls; guarded by mu_
  int delivered = 0;                 // callbacks run; guarded by mu_
  int gate_target = 0;               // guarded by mu_

 private:
  struct Pending {
    std::chrono::steady_clock::time_point due;
    ExecReply reply;
    ExecCallback done;
    std::string function;
  };
  class Handle : public RequestHandle {
   public:
    Handle(FakeService* service, uint64_t id) : service_(service), id_(id) {}
    void Cancel() override { service_->Cancel(id_); }

   private:
    FakeService* service_;
    uint64_t id_;
  };

  void Cancel(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled.push_back(id);
    auto it = pending_.find(id);
    if (it != pending_.end() && it->second.function == "slow") {
      it->second.due = std::chrono::steady_clock::now();
      it->second.reply = ExecReply();
      it->second.reply.status = absl::CancelledError("the caller went away");
    }
    cv_.notify_all();
  }

  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::map<uint64_t, Pending> pending_;
  std::vector<ExecRequest> requests_;
  std::thread worker_;
};

// The test client: blocking POSIX sockets with a 10 s receive timeout, so a server bug
// fails the test instead of hanging it. Dial adds a test failure when it cannot connect.
base::UniqueFd Dial(const std::string& path);
bool SendAll(int fd, absl::string_view data);

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json Json() const { return nlohmann::json::parse(body); }
};

// Reads one response from `fd`; `buffer` keeps bytes that belong to the next one.
std::optional<Response> ReadResponse(int fd, std::string& buffer);

// True when the server closes the connection (EOF or reset) with nothing more to read.
bool ReadsEof(int fd);

// Reads one response from `fd` and checks that it is the API's error form with `status`,
// `code` and `message`, and that the server closes the connection after it.
void ExpectErrorThenClose(int fd, int status, const std::string& code, const std::string& message);

std::string RequestText(const std::string& method, const std::string& target,
                        const std::string& body = "", const std::string& headers = "");

// One request on a new connection, and its response.
std::optional<Response> Call(const std::string& path, const std::string& method,
                             const std::string& target, const std::string& body = "");

// A directory for sockets: under TEST_TMPDIR when a socket path there fits in sun_path
// (108 bytes), else under /tmp, since Bazel's TEST_TMPDIR is usually too deep.
std::string MakeSocketDir();

// A server on a fresh socket dir serving `service_`, run on a thread of its own.
class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Stops the server (if any) and starts one with `limits` on the same socket.
  void RestartServer(const HttpLimits& limits);
  void StopServer();

  Response MustCall(const std::string& method, const std::string& target,
                    const std::string& body = "");

  FakeService service_;  // outlives the server: declared first
  std::string dir_;
  std::string path_;
  std::unique_ptr<HttpServer> server_;
  std::future<void> run_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_HTTP_SERVER_TESTING_H_
