#include "supervisor/agent_log.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/string_view.h"
#include "core/base/errno_status.h"
#include "supervisor/log.h"

namespace zygo::supervisor {
namespace {

constexpr size_t kTailBytes = 8192;

}  // namespace

absl::StatusOr<base::UniqueFd> AgentLog::Open() {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2(agent log)");
  reader_ = std::thread(&AgentLog::ReadLoop, this, base::UniqueFd(ends[0]));
  return base::UniqueFd(ends[1]);
}

void AgentLog::Join() {
  if (reader_.joinable()) reader_.join();
}

std::string AgentLog::Tail() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tail_;
}

void AgentLog::ReadLoop(base::UniqueFd read_end) {
  char buffer[4096];
  for (;;) {
    ssize_t n = read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    tail_.append(buffer, static_cast<size_t>(n));
    if (tail_.size() > kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
    LogOutputOf(name_, absl::string_view(buffer, static_cast<size_t>(n)));
  }
}

}  // namespace zygo::supervisor
