// HttpServer over real unix sockets: a FakeService answers from its own thread, and a
// tiny POSIX-socket client checks what goes over the wire (both in http_server_testing).
#include "supervisor/http_server.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/base/unique_fd.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/event_limit.h"
#include "supervisor/http_server_testing.h"

namespace zygo::supervisor {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST_F(HttpServerTest, Health) {
  Response response = MustCall("GET", "/v1/health");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers["content-type"], "application/json");
  EXPECT_EQ(response.headers["content-length"], std::to_string(response.body.size()));
  EXPECT_EQ(response.Json(), json({{"ok", true}}));
}

TEST_F(HttpServerTest, ListFunctions) {
  Response response = MustCall("GET", "/v1/functions");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.Json()["functions"][0]["name"], "listed");
  EXPECT_EQ(response.Json()["functions"][0]["state"], "warm");
}

TEST_F(HttpServerTest, UpReachesTheServiceWithTheTomlBody) {
  const std::string toml =
      "name = \"hello\"\nentry = \"app.py:main\"\n\n[limits]\nmemory = \"64M\"\n";
  Response response =
      MustCall("POST", "/v1/functions?origin=hello%20world.toml&base_dir=%2Fsrv%2Fapp", toml);
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.Json()["name"], "hello");
  EXPECT_EQ(response.Json()["spec_path"], "hello world.toml");
  ASSERT_TRUE(service_.WaitFor([&] { return service_.up_calls.size() == 1; }));
  EXPECT_EQ(service_.up_calls[0].spec, toml);
  EXPECT_EQ(service_.up_calls[0].origin, "hello world.toml");
  EXPECT_EQ(service_.up_calls[0].base_dir, "/srv/app");

  Response failed = MustCall("POST", "/v1/functions", "fail");
  EXPECT_EQ(failed.status, 400);
  EXPECT_EQ(failed.Json()["error"]["code"], "invalid_argument");
}

TEST_F(HttpServerTest, DownAndPutScript) {
  EXPECT_EQ(MustCall("DELETE", "/v1/functions/hello").Json(), json({{"ok", true}}));
  EXPECT_EQ(MustCall("DELETE", "/v1/functions/missing").status, 404);
  Response put = MustCall("PUT", "/v1/scripts", "def main(e): return e\n");
  EXPECT_EQ(put.status, 201);
  EXPECT_EQ(put.Json()["digest"], "sha256:" + std::string(64, 'a'));
}

TEST_F(HttpServerTest, ExecRoundTrip) {
  const std::string event = R"({"x":[1,2,"three"]})";
  Response response = MustCall("POST", "/v1/functions/echo/exec?script=sha256%3Abeef", event);
  ASSERT_EQ(response.status, 200) << response.body;
  json body = response.Json();
  EXPECT_EQ(body["ok"], true);
  EXPECT_EQ(body["result"], json::parse(event));
  EXPECT_TRUE(body["error"].is_null());
  EXPECT_EQ(body["stdout"], event);
  EXPECT_EQ(body["stderr"], "log line\n");
  EXPECT_EQ(body["stdout_truncated"], false);
  EXPECT_EQ(body["stderr_truncated"], true);
  EXPECT_EQ(body["outcome"], json::parse(R"({"status":"ok","exit_code":0,"signal":0,
      "timed_out":false,"oom_killed":false,"peak_rss_kb":4096,"wall_ms":12.5,
      "limits_applied":false})"));
  EXPECT_EQ(body["timings_us"],
            json::parse(R"({"fork":0,"admit":0,"run":700,"reply":30,"total":800})"));
  EXPECT_EQ(body.size(), 9u);
  std::vector<ExecRequest> requests = service_.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].function, "echo");
  EXPECT_EQ(requests[0].script_digest, "sha256:beef");
  EXPECT_EQ(requests[0].event_json, event);
  EXPECT_EQ(requests[0].stdin_data, event);
}

TEST_F(HttpServerTest, ExecStatusMapsToHttp) {
  const std::map<absl::StatusCode, int> expected = {
      {absl::StatusCode::kInvalidArgument, 400},   {absl::StatusCode::kNotFound, 404},
      {absl::StatusCode::kAlreadyExists, 409},     {absl::StatusCode::kFailedPrecondition, 412},
      {absl::StatusCode::kResourceExhausted, 429}, {absl::StatusCode::kCancelled, 499},
      {absl::StatusCode::kUnimplemented, 501},     {absl::StatusCode::kUnavailable, 503},
      {absl::StatusCode::kDeadlineExceeded, 504},  {absl::StatusCode::kInternal, 500},
      {absl::StatusCode::kUnknown, 500},           {absl::StatusCode::kDataLoss, 500}};
  for (const auto& [code, http] : expected) {
    Response response =
        MustCall("POST", absl::StrCat("/v1/functions/status-", static_cast<int>(code), "/exec"));
    EXPECT_EQ(response.status, http) << absl::StatusCodeToString(code);
    EXPECT_EQ(response.Json()["error"]["code"],
              absl::AsciiStrToLower(absl::StatusCodeToString(code)));
    EXPECT_EQ(response.Json()["error"]["message"], "fake failure");
  }
}

TEST_F(HttpServerTest, UnknownRouteAndWrongMethod) {
  EXPECT_EQ(MustCall("GET", "/v2/health").status, 404);
  EXPECT_EQ(MustCall("GET", "/v1/functions/a/b/c").Json()["error"]["code"], "not_found");
  Response response = MustCall("DELETE", "/v1/health");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.headers["allow"], "GET");
}

TEST_F(HttpServerTest, MalformedHttpIs400ThenClose) {
  for (const std::string& junk :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET /v1/health HTTP/9\r\n\r\n"),
        std::string("GET /v1/health HTTP/1.1\r\nContent-Length: zz\r\n\r\n"),
        std::string("GET /v1/health HTTP/1.1\r\nBad Header\r\n\r\n")}) {
    base::UniqueFd fd = Dial(path_);
    ASSERT_TRUE(SendAll(fd.get(), junk));
    std::string buffer;
    std::optional<Response> response = ReadResponse(fd.get(), buffer);
    ASSERT_TRUE(response.has_value()) << absl::CEscape(junk);
    EXPECT_EQ(response->status, 400);
    EXPECT_EQ(response->headers["connection"], "close");
    EXPECT_EQ(response->Json()["error"]["code"], "invalid_argument");
    EXPECT_TRUE(ReadsEof(fd.get()));
  }
  EXPECT_EQ(MustCall("GET", "/v1/health").status, 200);
}

TEST_F(HttpServerTest, RandomBytesNeverCrashTheServer) {
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    std::string junk(rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (i % 2 == 0) junk = "POST /v1/functions/echo/exec HTTP/1.1\r\n" + junk;
    base::UniqueFd fd = Dial(path_);
    SendAll(fd.get(), junk);
    shutdown(fd.get(), SHUT_WR);
    std::string buffer;
    ReadResponse(fd.get(), buffer);  // any answer, or none, is fine
  }
  EXPECT_EQ(MustCall("GET", "/v1/health").status, 200);
}

// Refused at the headers, the service never called. An exec's body is its event: its 413
// says so in the words gRPC and the core use. Control: an event at the limit reaches it.
TEST_F(HttpServerTest, DeclaredBodyOverLimitIs413) {
  for (const auto& [head, message] :
       {std::pair<std::string, std::string>{
            "PUT /v1/scripts", "request body is 16777217 bytes; the limit is 16777216 bytes"},
        {"POST /v1/functions/echo/exec", "event is 16777217 bytes; the limit is 16777216 bytes"}}) {
    base::UniqueFd fd = Dial(path_);
    ASSERT_TRUE(SendAll(fd.get(), absl::StrCat(head, " HTTP/1.1\r\nContent-Length: ",
                                               kMaxEventBytes + 1, "\r\n\r\n")));
    ExpectErrorThenClose(fd.get(), 413, "payload_too_large", message);
  }
  EXPECT_EQ(service_.Requests().size(), 0u);
  EXPECT_TRUE(service_.script_sizes.empty());

  const std::string at_limit = absl::StrCat("\"", std::string(kMaxEventBytes - 2, 'e'), "\"");
  Response accepted = MustCall("POST", "/v1/functions/echo/exec", at_limit);
  EXPECT_EQ(accepted.status, 200);
  ASSERT_EQ(service_.Requests().size(), 1u);
  EXPECT_EQ(service_.Requests()[0].event_json.size(), kMaxEventBytes);
}

TEST_F(HttpServerTest, ChunkedBodyOverLimitIs413) {
  base::UniqueFd fd = Dial(path_);
  // The server stops reading once it answers, so the sender runs on its own thread and
  // ends with EPIPE.
  std::thread sender([&] {
    SendAll(fd.get(), "PUT /v1/scripts HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    std::string chunk = absl::StrCat("100000\r\n", std::string(1 << 20, 'x'), "\r\n");
    for (int i = 0; i < 17 && SendAll(fd.get(), chunk); ++i) {
    }
  });
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  shutdown(fd.get(), SHUT_RDWR);
  sender.join();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->Json()["error"]["message"],
            "request body is more than 16777216 bytes; the limit is 16777216 bytes");
}

TEST_F(HttpServerTest, BodyAtTheLimitIsAccepted) {
  Response response = MustCall("PUT", "/v1/scripts", std::string(16 << 20, 's'));
  EXPECT_EQ(response.status, 201);
  ASSERT_TRUE(service_.WaitFor([&] { return !service_.script_sizes.empty(); }));
  EXPECT_EQ(service_.script_sizes[0], size_t{16} << 20);
}

TEST_F(HttpServerTest, ExpectContinue) {
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(SendAll(
      fd.get(), "PUT /v1/scripts HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  std::string buffer;
  std::optional<Response> interim = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(SendAll(fd.get(), "hello"));
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 201);
}

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  base::UniqueFd fd = Dial(path_);
  std::string buffer;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendAll(fd.get(), RequestText("GET", "/v1/health")));
    std::optional<Response> response = ReadResponse(fd.get(), buffer);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
  }
  // Pipelined: the exec's answer must come first, although health could answer at once.
  ASSERT_TRUE(SendAll(fd.get(), RequestText("POST", "/v1/functions/echo/exec", "1") +
                                    RequestText("GET", "/v1/nope") +
                                    RequestText("POST", "/v1/functions/echo/exec", "2")));
  std::optional<Response> first = ReadResponse(fd.get(), buffer);
  std::optional<Response> second = ReadResponse(fd.get(), buffer);
  std::optional<Response> third = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(first->Json()["result"], 1);
  EXPECT_EQ(second->status, 404);
  EXPECT_EQ(third->Json()["result"], 2);
}

TEST_F(HttpServerTest, ManyPipelinedRequestsAllAnsweredInOrder) {
  // Megabytes each way: the server must pause reading and answering as its buffers fill
  // (the client reads only after a while), and still answer every request in order.
  constexpr int kRequests = 40000;
  base::UniqueFd fd = Dial(path_);
  std::thread sender([&] {
    std::string batch;
    for (int i = 0; i < kRequests; ++i) {
      batch += RequestText("GET", i % 2 ? "/v1/health" : absl::StrCat("/v1/nope/", i));
    }
    SendAll(fd.get(), batch);
  });
  std::this_thread::sleep_for(milliseconds(200));
  std::string buffer;
  int answered = 0;
  for (; answered < kRequests; ++answered) {
    std::optional<Response> response = ReadResponse(fd.get(), buffer);
    if (!response.has_value()) break;
    if (answered % 2) {
      ASSERT_EQ(response->body, R"({"ok":true})");
    } else {
      ASSERT_EQ(response->Json()["error"]["message"],
                absl::StrCat("no route for GET /v1/nope/", answered));
    }
  }
  sender.join();
  EXPECT_EQ(answered, kRequests);
}

TEST_F(HttpServerTest, HalfCloseAfterRequestStillGetsTheAnswer) {
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(SendAll(fd.get(), RequestText("GET", "/v1/health")));
  shutdown(fd.get(), SHUT_WR);
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(ReadsEof(fd.get()));
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(SendAll(fd.get(), "GET /v1/health HTTP/1.0\r\n\r\n"));
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(ReadsEof(fd.get()));

  fd = Dial(path_);
  buffer.clear();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(SendAll(fd.get(), "GET /v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    response = ReadResponse(fd.get(), buffer);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->headers["connection"], "keep-alive");
  }
}

// The service's thread writes an exec reply straight to the socket, as far as the socket
// takes it; a reply far larger than the socket's buffer, to a client that reads late,
// must still arrive whole and in order, with the connection usable afterwards.
TEST_F(HttpServerTest, ExecReplyLargerThanTheSocketBufferArrivesWhole) {
  const std::string event = "\"" + std::string(3 << 20, 'x') + "\"";  // ~6 MB of reply
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(SendAll(fd.get(), RequestText("POST", "/v1/functions/echo/exec", event)));
  ASSERT_TRUE(service_.WaitFor([&] { return service_.delivered == 1; }));
  std::this_thread::sleep_for(milliseconds(50));  // the socket is full by now
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  ASSERT_EQ(response->status, 200);
  json body = response->Json();
  EXPECT_EQ(body["result"], json::parse(event));
  EXPECT_EQ(body["stdout"], event);
  ASSERT_TRUE(SendAll(fd.get(), RequestText("POST", "/v1/functions/echo/exec", "5")));
  response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Json()["result"], 5);
}

TEST_F(HttpServerTest, Http10ExecAnswersThenCloses) {
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(
      SendAll(fd.get(), "POST /v1/functions/echo/exec HTTP/1.0\r\nContent-Length: 1\r\n\r\n4"));
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd.get(), buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Json()["result"], 4);
  EXPECT_TRUE(ReadsEof(fd.get()));
}

TEST_F(HttpServerTest, HangupMidExecCancelsTheRequest) {
  base::UniqueFd fd = Dial(path_);
  ASSERT_TRUE(SendAll(fd.get(), RequestText("POST", "/v1/functions/slow/exec", "{}")));
  ASSERT_TRUE(service_.WaitFor([&] { return service_.execs == 1; }))
      << "the exec never reached the service";
  fd.Reset();
  ASSERT_TRUE(service_.WaitFor([&] { return service_.cancelled.size() == 1; }))
      << "the hang-up did not cancel the request";
  // The Cancelled reply that follows goes to a closed connection and is dropped.
  ASSERT_TRUE(service_.WaitFor([&] { return service_.delivered == 1; }));
  EXPECT_EQ(MustCall("GET", "/v1/health").status, 200);
}

TEST_F(HttpServerTest, ReplyAfterHangupIsDroppedSafely) {
  for (int i = 0; i < 20; ++i) {
    base::UniqueFd fd = Dial(path_);
    ASSERT_TRUE(SendAll(fd.get(), RequestText("POST", "/v1/functions/deaf/exec", "{}")));
  }  // every client hangs up at once; the service replies 300 ms later anyway
  ASSERT_TRUE(service_.WaitFor([&] { return service_.delivered == 20; }));
  EXPECT_EQ(MustCall("POST", "/v1/functions/echo/exec", "7").Json()["result"], 7);
}

TEST_F(HttpServerTest, ThousandConcurrentExecs) {
  constexpr int kClients = 1000;
  HttpLimits limits;  // all from one uid, past the default cap per client
  limits.max_connections_per_client = kClients;
  RestartServer(limits);
  service_.SetGateTarget(kClients);
  std::vector<base::UniqueFd> fds;
  for (int i = 0; i < kClients; ++i) {
    fds.push_back(Dial(path_));
    ASSERT_TRUE(fds.back().valid());
    ASSERT_TRUE(SendAll(fds.back().get(),
                        RequestText("POST", "/v1/functions/gate/exec", std::to_string(i))));
  }
  // No gate request is answered until all 1000 are in flight at once.
  for (int i = 0; i < kClients; ++i) {
    std::string buffer;
    std::optional<Response> response = ReadResponse(fds[i].get(), buffer);
    ASSERT_TRUE(response.has_value()) << "client " << i;
    ASSERT_EQ(response->status, 200) << response->body;
    ASSERT_EQ(response->Json()["result"], i);
  }
}

TEST_F(HttpServerTest, StopClosesConnectionsCancelsExecsAndReturnsRun) {
  base::UniqueFd idle = Dial(path_);
  base::UniqueFd busy = Dial(path_);
  ASSERT_TRUE(SendAll(busy.get(), RequestText("POST", "/v1/functions/slow/exec")));
  ASSERT_TRUE(service_.WaitFor([&] { return service_.execs == 1; }));
  server_->Stop();
  server_->Stop();  // idempotent
  ASSERT_EQ(run_.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(service_.WaitFor([&] { return service_.cancelled.size() == 1; }));
  EXPECT_TRUE(ReadsEof(idle.get()));
  EXPECT_TRUE(ReadsEof(busy.get()));
  server_->Stop();  // after Run returned: still harmless
  server_.reset();
  EXPECT_FALSE(std::filesystem::exists(path_)) << "the destructor unlinks the socket";
}

TEST_F(HttpServerTest, LiveSocketIsRefused) {
  FakeService other;
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Listen(path_, &other);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  EXPECT_NE(second.status().message().find("already listening"), absl::string_view::npos);
  EXPECT_EQ(MustCall("GET", "/v1/health").status, 200);
}

class HttpServerSocketTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeSocketDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  FakeService service_;
  std::string dir_;
};

TEST_F(HttpServerSocketTest, StaleSocketIsReplaced) {
  const std::string path = dir_ + "/api.sock";
  {
    // A socket file nobody listens on, as a crashed server leaves behind.
    base::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ASSERT_TRUE(std::filesystem::is_socket(path));
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Listen(path, &service_);
  ASSERT_TRUE(server.ok()) << server.status();
  std::future<void> run = std::async(std::launch::async, [&] { (*server)->Run(); });
  std::optional<Response> response = Call(path, "GET", "/v1/health");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  (*server)->Stop();
  EXPECT_EQ(run.wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST_F(HttpServerSocketTest, NonSocketFileIsLeftAlone) {
  const std::string path = dir_ + "/api.sock";
  { std::ofstream(path) << "precious"; }
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Listen(path, &service_);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition) << server.status();
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
}

TEST_F(HttpServerSocketTest, CreatesPrivateParentAndSocket) {
  const std::string path = dir_ + "/a/b/api.sock";
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Listen(path, &service_);
  ASSERT_TRUE(server.ok()) << server.status();
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat((dir_ + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Clients queue in the backlog before Run(), and Stop() before Run() makes it return.
  base::UniqueFd early = Dial(path);
  ASSERT_TRUE(SendAll(early.get(), RequestText("GET", "/v1/health")));
  (*server)->Stop();
  (*server)->Run();
  server->reset();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(HttpServerSocketTest, OverlongPathIsRejected) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Listen(dir_ + "/" + std::string(120, 'x'), &service_);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zygo::supervisor
