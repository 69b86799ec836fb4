// The HTTP front end's limits over a real unix socket: a request that does not arrive in
// time gets 408 (and not before its time), an idle keep-alive connection closes, a running
// exec is never cut, and connections past a cap get 503 at once while the others are kept.
// The timeouts are a fraction of a second here; the defaults are in connection_limits.h.
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/unique_fd.h"
#include "gtest/gtest.h"
#include "supervisor/connection_limits.h"
#include "supervisor/http_server_testing.h"

namespace zygo::supervisor {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTimeout(400);

// Open, with nothing to read: the server has neither answered nor closed.
bool StillOpen(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

class HttpServerLimitsTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    limits_.request_timeout = absl::FromChrono(kTimeout);
    limits_.idle_timeout = absl::FromChrono(kTimeout);
    limits_.max_connections_per_client = 4;
    RestartServer(limits_);
  }
  HttpLimits limits_;
};

TEST_F(HttpServerLimitsTest, ASlowRequestHeadGets408AtTheTimeoutAndNotBefore) {
  base::UniqueFd fd = Dial(path_);
  const auto start = Clock::now();
  ASSERT_TRUE(SendAll(fd.get(), "GET /v1/health HTTP/1.1\r\nHost: zy"));
  std::this_thread::sleep_for(kTimeout / 2);
  EXPECT_TRUE(StillOpen(fd.get())) << "closed before its timeout";
  ExpectErrorThenClose(fd.get(), 408, "request_timeout",
                       "the request did not arrive in full within 400ms");
  EXPECT_GE(Clock::now() - start, kTimeout - milliseconds(50));
}

// A client that sends a byte now and then does not restart the clock: the whole request
// must arrive within the timeout. So must a body.
TEST_F(HttpServerLimitsTest, TricklingBytesDoNotExtendTheRequestTimeout) {
  for (const std::string& request : {std::string("GET /v1/health HTTP/1.1\r\nHost: zygo\r\n\r\n"),
                                     RequestText("PUT", "/v1/scripts", std::string(64, 's'))}) {
    base::UniqueFd fd = Dial(path_);
    const std::string head_part = request.substr(0, request.size() - 20);
    ASSERT_TRUE(SendAll(fd.get(), head_part));
    size_t sent = head_part.size();
    const auto give_up = Clock::now() + kTimeout * 3;
    while (sent < request.size() && StillOpen(fd.get()) && Clock::now() < give_up) {
      std::this_thread::sleep_for(kTimeout / 8);
      SendAll(fd.get(), request.substr(sent++, 1));
    }
    EXPECT_LT(sent, request.size()) << "the trickle outlived the timeout";
    std::string buffer;
    std::optional<Response> response = ReadResponse(fd.get(), buffer);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 408);
  }
}

TEST_F(HttpServerLimitsTest, AnIdleKeepAliveConnectionClosesAfterTheIdleTimeout) {
  base::UniqueFd fd = Dial(path_);
  std::string buffer;
  ASSERT_TRUE(SendAll(fd.get(), RequestText("GET", "/v1/health")));
  ASSERT_EQ(ReadResponse(fd.get(), buffer).value_or(Response()).status, 200);
  // Control: idle for half the timeout, the connection still serves, and that resets it.
  std::this_thread::sleep_for(kTimeout / 2);
  ASSERT_TRUE(StillOpen(fd.get()));
  ASSERT_TRUE(SendAll(fd.get(), RequestText("GET", "/v1/health")));
  ASSERT_EQ(ReadResponse(fd.get(), buffer).value_or(Response()).status, 200);
  const auto idle_from = Clock::now();
  std::this_thread::sleep_for(kTimeout / 2);
  EXPECT_TRUE(StillOpen(fd.get())) << "closed before its idle timeout";
  EXPECT_TRUE(ReadsEof(fd.get())) << "an idle connection gets no answer, only the close";
  EXPECT_GE(Clock::now() - idle_from, kTimeout - milliseconds(50));
}

// An exec that runs longer than both timeouts ("deaf" answers after 300 ms) is not cut:
// while it runs, only the function's own deadline applies.
TEST_F(HttpServerLimitsTest, ARunningExecIsNotCutByEitherTimeout) {
  limits_.request_timeout = absl::Milliseconds(150);
  limits_.idle_timeout = absl::Milliseconds(150);
  RestartServer(limits_);
  Response response = MustCall("POST", "/v1/functions/deaf/exec", "[1]");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.Json()["result"], nlohmann::json::parse("[1]"));
}

TEST_F(HttpServerLimitsTest, ConnectionsPastTheClientsCapGet503AtOnceTheOthersStay) {
  std::vector<base::UniqueFd> held;
  for (int i = 0; i < 4; ++i) held.push_back(Dial(path_));
  // The fifth has sent nothing, and is answered and closed without waiting for it.
  base::UniqueFd fifth = Dial(path_);
  ExpectErrorThenClose(
      fifth.get(), 503, "unavailable",
      absl::StrCat("uid ", getuid(), " has 4 connections open, the most one client may have"));
  std::string buffer;
  for (const base::UniqueFd& fd : held) EXPECT_TRUE(StillOpen(fd.get()));
  // Each held one still serves, and once one goes, a new connection is served.
  ASSERT_TRUE(SendAll(held[0].get(), RequestText("GET", "/v1/health")));
  EXPECT_EQ(ReadResponse(held[0].get(), buffer).value_or(Response()).status, 200);
  held.pop_back();
  std::optional<Response> after = std::nullopt;
  for (int attempt = 0; attempt < 50 && !(after && after->status == 200); ++attempt) {
    after = Call(path_, "GET", "/v1/health");  // the close reaches the loop in a moment
  }
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status, 200);
}

TEST_F(HttpServerLimitsTest, TheGlobalCapRefusesWhenTheClientCapWouldNot) {
  limits_.max_connections = 3;
  limits_.max_connections_per_client = 4;  // above the global cap: only that one can refuse
  RestartServer(limits_);
  std::vector<base::UniqueFd> held;
  for (int i = 0; i < 3; ++i) held.push_back(Dial(path_));
  std::optional<Response> refused = Call(path_, "GET", "/v1/health");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->Json()["error"]["message"],
            "the supervisor has 3 connections open, the most it takes; try again");
}

}  // namespace
}  // namespace zygo::supervisor
