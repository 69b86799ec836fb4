// ApiConnection over real unix sockets: a kept-alive connection the server closed while
// it sat idle is found closed only by the next request, which then goes again, once, on a
// new connection. Against the real HttpServer (its idle timeout: the send meets EPIPE),
// and against a server that drops the connection as the request arrives (the race of a
// request with that timeout: a reset, or EOF, before any byte of a reply).
#include "sdk/cpp/zygo/api_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/unique_fd.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/connection_limits.h"
#include "supervisor/http_server_testing.h"

namespace zygo::supervisor {
namespace {

using sdk::ApiConnection;
using sdk::HttpReply;

class ApiConnectionTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    HttpLimits limits;
    limits.idle_timeout = absl::Milliseconds(200);
    RestartServer(limits);
  }
};

TEST_F(ApiConnectionTest, ACallAfterTheServerClosedTheIdleConnectionGoesThroughOnANewOne) {
  absl::StatusOr<ApiConnection> connection = ApiConnection::Connect(path_);
  ASSERT_TRUE(connection.ok()) << connection.status();
  absl::StatusOr<HttpReply> first = connection->Call("GET", "/v1/health", "");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->status, 200);
  // Control: a connection kept alive the same way, idle from a moment later, is closed
  // by the server; so by then is the ApiConnection's, idle for longer.
  base::UniqueFd raw = Dial(path_);
  std::string buffer;
  ASSERT_TRUE(SendAll(raw.get(), RequestText("GET", "/v1/health")));
  ASSERT_EQ(ReadResponse(raw.get(), buffer).value_or(Response()).status, 200);
  ASSERT_TRUE(ReadsEof(raw.get())) << "the server kept an idle connection open";

  const std::string event = R"({"n":1})";
  absl::StatusOr<HttpReply> after = connection->Call("POST", "/v1/functions/echo/exec", event);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(nlohmann::json::parse(after->body)["result"], nlohmann::json::parse(event));
  // Sent whole on the new connection, and run once.
  ASSERT_EQ(service_.Requests().size(), 1u);
  EXPECT_EQ(service_.Requests()[0].event_json, event);
}

// What the server does with the request that arrives on the connection it drops.
enum class Dropped { kUnread, kRead };

// Answers the first request of its first connection keep-alive; drops that connection
// once the second request is in (reading it or not), and answers on the next connection.
class DroppingServer {
 public:
  DroppingServer(const std::string& path, Dropped how) {
    listener_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path.copy(address.sun_path, sizeof(address.sun_path) - 1);
    EXPECT_EQ(bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(listener_.get(), 4), 0);
    thread_ = std::thread([this, how] { Serve(how); });
  }
  ~DroppingServer() { Join(); }

  // Waits for the server to finish (it gives up on a step after 10 s).
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  // Read after Join.
  bool dropped_with_a_request = false;
  int connections = 0;

 private:
  static bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 10'000) == 1;
  }
  static bool ReadHead(int fd) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos) {
      if (!Readable(fd) || recv(fd, &c, 1, 0) != 1) return false;
      head.push_back(c);
    }
    return true;
  }
  static void Answer(int fd, const std::string& body) {
    SendAll(fd, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
  }
  base::UniqueFd Accept() {
    if (!Readable(listener_.get())) return base::UniqueFd();
    ++connections;
    return base::UniqueFd(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  void Serve(Dropped how) {
    base::UniqueFd first = Accept();
    if (!first.valid() || !ReadHead(first.get())) return;
    Answer(first.get(), "one");
    if (!Readable(first.get())) return;
    dropped_with_a_request = how == Dropped::kUnread || ReadHead(first.get());
    first.Reset();  // unread bytes make the client's recv ECONNRESET; else it reads EOF
    base::UniqueFd second = Accept();
    if (second.valid() && ReadHead(second.get())) Answer(second.get(), "two");
  }

  base::UniqueFd listener_;
  std::thread thread_;
};

void ExpectTheDroppedRequestGoesAgain(Dropped how) {
  const std::string dir = MakeSocketDir();
  const std::string path = dir + "/api.sock";
  DroppingServer server(path, how);
  absl::StatusOr<ApiConnection> connection = ApiConnection::Connect(path);
  ASSERT_TRUE(connection.ok()) << connection.status();
  absl::StatusOr<HttpReply> first = connection->Call("GET", "/v1/health", "");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->body, "one");
  absl::StatusOr<HttpReply> second = connection->Call("GET", "/v1/health", "");
  EXPECT_TRUE(second.ok()) << second.status();
  if (second.ok()) {
    EXPECT_EQ(second->body, "two");
  }
  server.Join();
  // Control: the first connection was dropped with the request in it, so "two" came on a
  // second one.
  EXPECT_TRUE(server.dropped_with_a_request);
  EXPECT_EQ(server.connections, 2);
  std::filesystem::remove_all(dir);
}

TEST(ApiConnectionDroppedTest, ARequestTheServerDroppedUnreadGoesAgainOnANewConnection) {
  ExpectTheDroppedRequestGoesAgain(Dropped::kUnread);
}

TEST(ApiConnectionDroppedTest, ARequestTheServerReadAndDroppedUnansweredGoesAgain) {
  ExpectTheDroppedRequestGoesAgain(Dropped::kRead);
}

}  // namespace
}  // namespace zygo::supervisor
