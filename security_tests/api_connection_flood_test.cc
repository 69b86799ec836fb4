// The HTTP front end of a real supervisor under the attacks that used to lock every client
// out: another uid holds 1,200 half-open connections (a partial request head each), a
// client sends its head too slowly, a kept-alive connection sits idle. The supervisor runs
// with the open-file limit it had when 1,000 connections exhausted it (1,024); with no
// function warm it holds few fds of its own, so the flood is larger than the limit.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "security_tests/supervisor_options.h"
#include "supervisor/connection_limits.h"

namespace zygo::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kFlood = 1200;
constexpr uid_t kFloodUid = 65534;  // nobody: another client than this root test
constexpr char kPartialHead[] = "POST /v1/functions/x/exec HTTP/1.1\r\nHost: zygo\r\nContent-Le";
// What the test itself asks, as a well-behaved client: on a kept-alive connection, and
// on one the server closes after answering.
constexpr char kHealth[] = "GET /v1/health HTTP/1.1\r\nHost: zygo\r\n\r\n";
constexpr char kHealthOnce[] = "GET /v1/health HTTP/1.1\r\nHost: zygo\r\nConnection: close\r\n\r\n";

// A connected client socket whose reads give up after `timeout` (a hung server fails the
// test instead of hanging it); invalid when connect fails.
int Dial(const std::string& path, std::chrono::seconds timeout = std::chrono::seconds(5)) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  timeval tv = {static_cast<time_t>(timeout.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  return send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

// What arrives until the server closes (or the read times out: then `closed` is false).
struct Received {
  std::string bytes;
  bool closed = false;
};
Received ReadToClose(int fd) {
  Received received;
  char buffer[4096];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      received.bytes.append(buffer, n);
      continue;
    }
    received.closed = n == 0 || (n < 0 && errno == ECONNRESET);
    return received;
  }
}

// Open, nothing to read: the server has neither answered nor closed.
bool StillOpen(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

// The status line of one request on a new connection, or what went wrong. The answer is
// read even when the send failed: a refused client is answered and closed at once.
std::string StatusOf(const std::string& socket, const std::string& request = kHealthOnce) {
  const int fd = Dial(socket);
  if (fd < 0) return absl::StrCat("connect: ", strerror(errno));
  (void)SendAll(fd, request);
  const Received answer = ReadToClose(fd);
  close(fd);
  return answer.bytes.empty() ? "no answer" : answer.bytes.substr(0, answer.bytes.find("\r\n"));
}

// kFlood half-open connections from kFloodUid, held by a child until the flood ends.
class Flood {
 public:
  struct Count {
    int held = 0;            // open, unanswered: the supervisor keeps them
    int refused = 0;         // answered 503 and closed at once
    int other = 0;           // neither (connect failed, another answer)
    bool fds_short = false;  // the flooder's own open-file limit is below kFlood
  };

  // Forks the flooder; returns once it has opened every connection and counted them.
  static std::optional<Flood> Start(const std::string& socket, std::string* error) {
    int report[2], done[2];
    if (pipe2(report, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      close(done[1]);
      Flooder(socket, report[1], done[0]);
    }
    close(report[1]);
    close(done[0]);
    Flood flood(pid, done[1]);
    const ssize_t n = read(report[0], &flood.count_, sizeof(flood.count_));
    close(report[0]);
    if (n != sizeof(flood.count_)) {
      *error = "the flooder did not report";
      return std::nullopt;
    }
    if (flood.count_.fds_short) {
      *error = absl::StrCat("the flooder cannot have ", kFlood + 64, " open files");
      return std::nullopt;
    }
    return flood;
  }

  Flood(Flood&& other) noexcept : pid_(other.pid_), done_(other.done_), count_(other.count_) {
    other.pid_ = -1;
    other.done_ = -1;
  }
  // Ends the flood: the child closes every connection and exits.
  ~Flood() {
    if (done_ >= 0) close(done_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  const Count& count() const { return count_; }

 private:
  Flood(pid_t pid, int done) : pid_(pid), done_(done) {}

  [[noreturn]] static void Flooder(const std::string& socket, int report, int done) {
    Count count;
    // Room for the flood in this process (still root: it may raise the hard limit too).
    struct rlimit open_files = {};
    getrlimit(RLIMIT_NOFILE, &open_files);
    open_files.rlim_max = std::max<rlim_t>(open_files.rlim_max, kFlood + 64);
    open_files.rlim_cur = open_files.rlim_max;
    count.fds_short = setrlimit(RLIMIT_NOFILE, &open_files) != 0;
    if (setgroups(0, nullptr) != 0 || setgid(kFloodUid) != 0 || setuid(kFloodUid) != 0) _exit(1);
    std::vector<int> fds;
    for (int i = 0; i < kFlood; ++i) {
      const int fd = Dial(socket);
      if (fd >= 0) SendAll(fd, kPartialHead);
      fds.push_back(fd);
    }
    // The supervisor answers a refused one at once, but its loop may still be accepting
    // the flood (a slow host, an emulated one): wait until the number still open stops
    // changing for half a second (at most 30 s), then count.
    int open_before = -1;
    for (int waited = 0; waited < 60; ++waited) {
      std::this_thread::sleep_for(milliseconds(500));
      int open_now = 0;
      for (int fd : fds) open_now += fd >= 0 && StillOpen(fd) ? 1 : 0;
      if (open_now == open_before) break;
      open_before = open_now;
    }
    for (int fd : fds) {
      if (fd < 0) {
        ++count.other;
      } else if (StillOpen(fd)) {
        ++count.held;
      } else {
        const Received answer = ReadToClose(fd);
        ++(absl::StartsWith(answer.bytes, "HTTP/1.1 503 ") && answer.closed ? count.refused
                                                                            : count.other);
      }
    }
    (void)!write(report, &count, sizeof(count));
    char c;
    (void)!read(done, &c, 1);  // until the test closes its end
    _exit(0);
  }

  pid_t pid_;
  int done_;
  Count count_;
};

class ApiConnectionFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/zygo-flood-XXXXXX";  // short: the sockets must fit in sun_path
    ASSERT_NE(mkdtemp(dir), nullptr) << strerror(errno);
    dir_ = dir;
  }
  void TearDown() override {
    supervisor_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // A supervisor with RLIMIT_NOFILE (soft, hard) and `args`, whose socket another uid
  // may connect to (the flood comes from one).
  void StartSupervisor(uint64_t soft, uint64_t hard, std::vector<std::string> args = {}) {
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.dir = dir_;
    options.open_files_soft = soft;
    options.open_files_hard = hard;
    options.args = std::move(args);
    absl::StatusOr<std::unique_ptr<SupervisorProcess>> started = SupervisorProcess::Start(options);
    if (!started.ok() && absl::StrContains(started.status().message(), "no usable cgroups")) {
      GTEST_SKIP() << started.status();
    }
    ASSERT_TRUE(started.ok()) << started.status();
    supervisor_ = *std::move(started);
    ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
    ASSERT_EQ(chmod(supervisor_->http_socket().c_str(), 0666), 0);
  }

  std::string dir_;
  std::unique_ptr<SupervisorProcess> supervisor_;
};

// The flood takes its own cap of connections and no more; this test, another client,
// is served throughout. The supervisor's open files are the 1,024 that the same flood
// once exhausted.
TEST_F(ApiConnectionFloodTest, HalfOpenConnectionsOfAnotherUidPastTheFdLimitLeaveThisClientServed) {
  StartSupervisor(1024, 1024);
  if (IsSkipped() || HasFatalFailure()) return;
  const supervisor::HttpLimits fitted = supervisor::FitToOpenFiles({}, 1024);
  EXPECT_TRUE(absl::StrContains(
      supervisor_->Log(),
      absl::StrCat("up to ", fitted.max_connections, " connections, ",
                   fitted.max_connections_per_client, " per client (open files: 1024)")))
      << supervisor_->Log();
  const std::string socket = supervisor_->http_socket();
  ASSERT_EQ(StatusOf(socket), "HTTP/1.1 200 OK") << "control: served with no flood";

  std::string error;
  std::optional<Flood> flood = Flood::Start(socket, &error);
  ASSERT_TRUE(flood.has_value()) << error;
  EXPECT_EQ(flood->count().held, static_cast<int>(fitted.max_connections_per_client));
  EXPECT_EQ(flood->count().refused, kFlood - static_cast<int>(fitted.max_connections_per_client));
  EXPECT_EQ(flood->count().other, 0);
  // While the flood holds its connections: this client's requests are served, each in
  // a few seconds at most (Dial's read timeout), however many it makes.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(StatusOf(socket), "HTTP/1.1 200 OK") << "request " << i;
}

// Control: without a cap per client (the global cap alone, 384 for 1,024 open files), the
// same flood does lock this client out; it is told so at once (503), the supervisor stays
// up, and serves again when the flood ends.
TEST_F(ApiConnectionFloodTest, WithoutACapPerClientTheSameFloodLocksOthersOut) {
  StartSupervisor(1024, 1024, {"--http-max-connections-per-client", "1000000"});
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string socket = supervisor_->http_socket();
  ASSERT_EQ(StatusOf(socket), "HTTP/1.1 200 OK");
  const size_t global = supervisor::FitToOpenFiles({}, 1024).max_connections;
  {
    std::string error;
    std::optional<Flood> flood = Flood::Start(socket, &error);
    ASSERT_TRUE(flood.has_value()) << error;
    // All the global cap has room for but one: the fixture's own client keeps one open
    // (its health check's, kept alive).
    EXPECT_EQ(flood->count().held, static_cast<int>(global) - 1);
    EXPECT_EQ(flood->count().refused, kFlood - flood->count().held);
    EXPECT_EQ(StatusOf(socket), "HTTP/1.1 503 Service Unavailable");
  }
  std::string status;
  for (int i = 0; i < 50 && status != "HTTP/1.1 200 OK"; ++i) {
    std::this_thread::sleep_for(milliseconds(100));  // the flood's closes reach the loop
    status = StatusOf(socket);
  }
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
}

// zygo serve raises its soft open-file limit to the hard one: 1,200 connections of one
// client fit (with 1,024 open files they could not: 384 would), and this client is served.
TEST_F(ApiConnectionFloodTest, TheOpenFileLimitIsRaisedToTheHardLimitAtStart) {
  StartSupervisor(1024, 4096, {"--http-max-connections-per-client", "1200"});
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_TRUE(absl::StrContains(supervisor_->Log(), "(open files: 4096)")) << supervisor_->Log();
  std::string error;
  std::optional<Flood> flood = Flood::Start(supervisor_->http_socket(), &error);
  ASSERT_TRUE(flood.has_value()) << error;
  EXPECT_EQ(flood->count().held, kFlood);
  EXPECT_EQ(flood->count().refused, 0);
  EXPECT_EQ(StatusOf(supervisor_->http_socket()), "HTTP/1.1 200 OK");
}

// A head sent too slowly is answered 408 and closed at the request timeout, not before;
// control: the same head completed in time on a connection opened with it is served.
TEST_F(ApiConnectionFloodTest, ASlowHeadIsClosedAtTheRequestTimeoutAndNotBefore) {
  StartSupervisor(0, 0, {"--http-request-timeout", "1s"});
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string socket = supervisor_->http_socket();
  const int slow = Dial(socket), prompt = Dial(socket);
  ASSERT_GE(slow, 0);
  ASSERT_GE(prompt, 0);
  const auto start = Clock::now();
  ASSERT_TRUE(SendAll(slow, "GET /v1/health HTTP/1.1\r\nHo"));
  ASSERT_TRUE(SendAll(prompt, "GET /v1/health HTTP/1.1\r\nHo"));
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_TRUE(StillOpen(slow)) << "closed before the timeout";
  ASSERT_TRUE(SendAll(prompt, "st: zygo\r\n\r\n"));
  char buffer[64];
  const ssize_t n = recv(prompt, buffer, sizeof(buffer), 0);
  EXPECT_TRUE(n > 0 && absl::StartsWith(std::string(buffer, n), "HTTP/1.1 200 "));
  const Received answer = ReadToClose(slow);
  EXPECT_GE(Clock::now() - start, milliseconds(950));
  EXPECT_TRUE(absl::StartsWith(answer.bytes, "HTTP/1.1 408 Request Timeout\r\n")) << answer.bytes;
  EXPECT_TRUE(answer.closed);
  close(slow);
  close(prompt);
}

// A kept-alive connection is closed once idle for the idle timeout, not before; control:
// just before it, the same connection still serves.
TEST_F(ApiConnectionFloodTest, AnIdleKeepAliveConnectionIsClosedAtTheIdleTimeout) {
  StartSupervisor(0, 0, {"--http-idle-timeout", "1s"});
  if (IsSkipped() || HasFatalFailure()) return;
  const int fd = Dial(supervisor_->http_socket());
  ASSERT_GE(fd, 0);
  char buffer[4096];
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(SendAll(fd, kHealth));
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    ASSERT_TRUE(n > 0 && absl::StartsWith(std::string(buffer, n), "HTTP/1.1 200 ")) << i;
    std::this_thread::sleep_for(milliseconds(600));
    EXPECT_TRUE(StillOpen(fd)) << "closed before the idle timeout, round " << i;
  }
  const Received rest = ReadToClose(fd);
  EXPECT_TRUE(rest.closed);
  EXPECT_EQ(rest.bytes, "") << "an idle connection is closed without an answer";
  close(fd);
}

}  // namespace
}  // namespace zygo::testing
