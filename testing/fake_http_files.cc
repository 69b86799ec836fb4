#include "testing/fake_http_files.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace zygo::testing {
namespace {

constexpr int kPollMs = 50;
constexpr size_t kMaxRequestBytes = 16 << 10;

bool SendAll(int fd, const std::string& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// The request's head (up to the blank line), or "" when the peer stalls or sends junk.
std::string ReadHead(int fd) {
  const timeval wait = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestBytes) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    head.append(buffer, static_cast<size_t>(n));
  }
  return head;
}

}  // namespace

FakeHttpFiles::FakeHttpFiles(base::UniqueFd listener) : listener_(std::move(listener)) {
  fcntl(listener_.get(), F_SETFL, fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpFiles::~FakeHttpFiles() {
  stop_ = true;
  thread_.join();
}

void FakeHttpFiles::SetRoot(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  root_ = dir;
}

std::vector<std::string> FakeHttpFiles::Requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeHttpFiles::Serve() {
  pollfd pfd = {listener_.get(), POLLIN, 0};
  while (!stop_) {
    if (poll(&pfd, 1, kPollMs) <= 0) continue;
    base::UniqueFd connection(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection.valid()) Answer(std::move(connection));
  }
}

void FakeHttpFiles::Answer(base::UniqueFd connection) {
  const std::string head = ReadHead(connection.get());
  std::vector<std::string> words = absl::StrSplit(head.substr(0, head.find("\r\n")), ' ');
  if (words.size() != 3) return;
  const std::string& method = words[0];
  std::string path = words[1].substr(0, words[1].find('?'));
  std::string root;
  {
    std::lock_guard<std::mutex> lock(mu_);
    root = root_;
  }
  bool found = false;
  std::string body;
  struct stat st;
  const std::string file = absl::StrCat(root, path);
  if (!root.empty() && absl::StartsWith(path, "/") && !absl::StrContains(path, "..") &&
      stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    body = bytes.str();
    found = true;
  }
  const int status = found ? 200 : 404;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(absl::StrCat(method, " ", path, " ", status));
  }
  std::string reply =
      absl::StrCat("HTTP/1.0 ", status, found ? " OK" : " Not Found",
                   "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n");
  if (method != "HEAD") reply += body;
  SendAll(connection.get(), reply);
}

}  // namespace zygo::testing
