// Length-prefixed messages over the worker's stream socket.
#include "agents/node/control_channel.h"

#include <errno.h>
#include <unistd.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"

namespace zygo::agents::node {
namespace {

// Reads exactly `size` bytes; `got_any` says whether EOF came after some of them.
absl::Status ReadExact(int fd, char* data, size_t size, bool* got_any) {
  while (size > 0) {
    const ssize_t got = ::read(fd, data, size);
    if (got < 0) {
      if (errno == EINTR) continue;
      return base::ErrnoStatus(errno, "read(worker channel)");
    }
    if (got == 0) {
      return *got_any ? absl::DataLossError("the worker's channel ended inside a message")
                      : absl::UnavailableError("the worker closed its channel");
    }
    *got_any = true;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteControlMessage(const base::UniqueFd& fd, absl::string_view bytes) {
  if (bytes.size() > kMaxControlMessage) {
    return absl::InvalidArgumentError(
        absl::StrCat("a message of ", bytes.size(), " bytes is over ", kMaxControlMessage));
  }
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  const char head[4] = {static_cast<char>(length & 0xff), static_cast<char>((length >> 8) & 0xff),
                        static_cast<char>((length >> 16) & 0xff),
                        static_cast<char>((length >> 24) & 0xff)};
  if (absl::Status status = base::sys::WriteAll(fd, head, sizeof(head), "worker channel");
      !status.ok()) {
    return status;
  }
  return base::sys::WriteAll(fd, bytes.data(), bytes.size(), "worker channel");
}

absl::StatusOr<std::string> ReadControlMessage(int fd) {
  unsigned char head[4];
  bool got_any = false;
  if (absl::Status status = ReadExact(fd, reinterpret_cast<char*>(head), sizeof(head), &got_any);
      !status.ok()) {
    return status;
  }
  const uint32_t length = uint32_t{head[0]} | (uint32_t{head[1]} << 8) | (uint32_t{head[2]} << 16) |
                          (uint32_t{head[3]} << 24);
  if (length > kMaxControlMessage) {
    return absl::InvalidArgumentError(absl::StrCat("the worker sent a message of ", length,
                                                   " bytes; at most ", kMaxControlMessage));
  }
  std::string bytes(length, '\0');
  if (absl::Status status = ReadExact(fd, bytes.data(), length, &got_any); !status.ok()) {
    return status;
  }
  return bytes;
}

}  // namespace zygo::agents::node
