#include "testing/fake_tcp_servers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace zygo::testing {
namespace {

// Every wait is bounded so that a stalled peer cannot keep the destructor waiting.
constexpr int kPollMs = 50;

void SetTimeouts(int fd) {
  const timeval step = {0, kPollMs * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &step, sizeof(step));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &step, sizeof(step));
}

bool TimedOut(ssize_t n) { return n < 0 && (errno == EAGAIN || errno == EINTR); }

}  // namespace

FakeTcpServers::FakeTcpServers(std::vector<std::pair<base::UniqueFd, TcpService>> listeners)
    : listeners_(std::move(listeners)) {
  for (const auto& [listener, service] : listeners_) {
    fcntl(listener.get(), F_SETFL, fcntl(listener.get(), F_GETFL) | O_NONBLOCK);
  }
  acceptor_ = std::thread([this] { Accept(); });
}

FakeTcpServers::~FakeTcpServers() {
  stop_ = true;
  acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& sender : senders_) sender.join();
}

void FakeTcpServers::Accept() {
  std::vector<pollfd> fds;
  for (const auto& [listener, service] : listeners_) fds.push_back({listener.get(), POLLIN, 0});
  while (!stop_) {
    if (poll(fds.data(), fds.size(), kPollMs) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      base::UniqueFd connection(accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC));
      if (!connection.valid() || listeners_[i].second == TcpService::kAcceptAndClose) continue;
      std::lock_guard<std::mutex> lock(mu_);
      senders_.emplace_back([this, fd = connection.Release()] { SendAsked(base::UniqueFd(fd)); });
    }
  }
}

void FakeTcpServers::SendAsked(base::UniqueFd connection) {
  SetTimeouts(connection.get());
  uint8_t count[8];
  size_t have = 0;
  while (have < sizeof(count) && !stop_) {
    const ssize_t n = recv(connection.get(), count + have, sizeof(count) - have, 0);
    if (TimedOut(n)) continue;
    if (n <= 0) return;
    have += static_cast<size_t>(n);
  }
  uint64_t left = 0;
  for (uint8_t byte : count) left = left << 8 | byte;
  static const std::vector<char> kZeros(1 << 20, 0);
  while (left > 0 && !stop_) {
    const size_t chunk = left < kZeros.size() ? static_cast<size_t>(left) : kZeros.size();
    const ssize_t n = send(connection.get(), kZeros.data(), chunk, MSG_NOSIGNAL);
    if (TimedOut(n)) continue;
    if (n <= 0) return;
    left -= static_cast<uint64_t>(n);
  }
}

}  // namespace zygo::testing
