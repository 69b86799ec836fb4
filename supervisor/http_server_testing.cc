// The HttpServer tests' fake Service and socket client.
#include "supervisor/http_server_testing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace zygo::supervisor {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::shared_ptr<RequestHandle> FakeService::Exec(ExecRequest request, ExecCallback done) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = ++next_id_;
  Pending pending{Clock::now(), ExecReply(), std::move(done), request.function};
  ExecReply& reply = pending.reply;
  const std::string& fn = request.function;
  int code = 0;
  if (fn == "echo" || fn == "deaf" || fn == "gate") {
    reply.ok = true;
    reply.result_json = request.event_json;
    reply.stdout_data = request.stdin_data;
    reply.stderr_data = "log line\n";
    reply.stderr_truncated = true;
    reply.outcome = {core::OutcomeStatus::kOk, 0, 0, false, false, 4096, 12.5};
    reply.timings = {0, 0, 700, 30, 800};
    pending.due += milliseconds(fn == "deaf" ? 300 : 20);
    if (fn == "gate") pending.due = Clock::time_point::max();
  } else if (absl::SimpleAtoi(absl::StripPrefix(fn, "status-"), &code)) {
    reply.status = absl::Status(static_cast<absl::StatusCode>(code), "fake failure");
    pending.due += milliseconds(5);
  } else if (fn == "slow") {
    pending.due += std::chrono::seconds(30);
  } else {
    reply.status = absl::NotFoundError("no function " + fn);
  }
  pending_.emplace(id, std::move(pending));
  requests_.push_back(std::move(request));
  ++execs;
  int gated = 0;
  for (auto& [pid, p] : pending_) gated += p.function == "gate";
  if (gate_target > 0 && gated >= gate_target) {
    for (auto& [pid, p] : pending_) {
      if (p.function == "gate") p.due = Clock::now();
    }
  }
  cv_.notify_all();
  return std::make_shared<Handle>(this, id);
}

void FakeService::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::vector<Pending> due;
    Clock::time_point next = Clock::time_point::max();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.due <= Clock::now() || stopping_) {
        due.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        next = std::min(next, it->second.due);
        ++it;
      }
    }
    if (!due.empty()) {
      lock.unlock();
      for (Pending& p : due) {
        if (stopping_) p.reply.status = absl::CancelledError("shutting down");
        p.done(std::move(p.reply));
      }
      lock.lock();
      delivered += due.size();
      cv_.notify_all();
      continue;
    }
    if (stopping_) return;
    if (next == Clock::time_point::max()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, next);
    }
  }
}

// The test client: blocking POSIX sockets with a receive timeout, so a server bug fails
// the test instead of hanging it.
base::UniqueFd Dial(const std::string& path) {
  base::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "connect(" << path << "): " << strerror(errno);
    return base::UniqueFd();
  }
  timeval timeout = {10, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

bool SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(n);
  }
  return true;
}

// Reads one response from `fd`; `buffer` keeps bytes that belong to the next one.
std::optional<Response> ReadResponse(int fd, std::string& buffer) {
  auto fill = [&]() {
    char chunk[65536];
    ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer.append(chunk, n);
    return true;
  };
  size_t end;
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return std::nullopt;
  }
  std::vector<std::string> lines = absl::StrSplit(buffer.substr(0, end), "\r\n");
  Response response;
  std::vector<std::string> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &response.status)) {
    return std::nullopt;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(lines[i], absl::MaxSplits(": ", 1));
    response.headers[absl::AsciiStrToLower(kv.first)] = kv.second;
  }
  size_t length = 0;
  if (response.status != 100 && !absl::SimpleAtoi(response.headers["content-length"], &length)) {
    return std::nullopt;
  }
  buffer.erase(0, end + 4);
  while (buffer.size() < length) {
    if (!fill()) return std::nullopt;
  }
  response.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return response;
}

// True when the server closes the connection (EOF or reset) with nothing more to read.
bool ReadsEof(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::string RequestText(const std::string& method, const std::string& target,
                        const std::string& body, const std::string& headers) {
  return absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: zygo\r\n", headers,
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

std::optional<Response> Call(const std::string& path, const std::string& method,
                             const std::string& target, const std::string& body) {
  base::UniqueFd fd = Dial(path);
  if (!fd.valid() || !SendAll(fd.get(), RequestText(method, target, body))) return std::nullopt;
  std::string buffer;
  return ReadResponse(fd.get(), buffer);
}

// A directory for sockets: under TEST_TMPDIR when a socket path there fits in sun_path
// (108 bytes), else under /tmp, since Bazel's TEST_TMPDIR is usually too deep.
std::string MakeSocketDir() {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string base = tmp != nullptr && strlen(tmp) < 60 ? tmp : "/tmp";
  std::string pattern = base + "/zygo-http-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << strerror(errno);
  return pattern;
}

void ExpectErrorThenClose(int fd, int status, const std::string& code, const std::string& message) {
  std::string buffer;
  std::optional<Response> response = ReadResponse(fd, buffer);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, status) << response->body;
  EXPECT_EQ(response->Json()["error"], (nlohmann::json{{"code", code}, {"message", message}}));
  EXPECT_TRUE(ReadsEof(fd));
}

void HttpServerTest::SetUp() {
  dir_ = MakeSocketDir();
  path_ = dir_ + "/api.sock";
  RestartServer(HttpLimits());
}

void HttpServerTest::TearDown() {
  StopServer();
  std::filesystem::remove_all(dir_);
}

void HttpServerTest::StopServer() {
  if (server_ == nullptr) return;
  server_->Stop();
  EXPECT_EQ(run_.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  server_.reset();
}

void HttpServerTest::RestartServer(const HttpLimits& limits) {
  StopServer();
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Listen(path_, &service_, limits);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  run_ = std::async(std::launch::async, [this] { server_->Run(); });
}

Response HttpServerTest::MustCall(const std::string& method, const std::string& target,
                                  const std::string& body) {
  std::optional<Response> response = Call(path_, method, target, body);
  EXPECT_TRUE(response.has_value()) << method << " " << target;
  return response.value_or(Response());
}

}  // namespace zygo::supervisor
