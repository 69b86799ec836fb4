// Event memfds: what the supervisor seals is what the agent reads, and a memfd that could
// still change, or is not the size the Run says, is refused.
#include "agents/wire/event_memfd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "agents/wire/messages.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {
namespace {

std::string Pattern(size_t size) {
  std::string text(size, '\0');
  for (size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  return text;
}

TEST(EventMemfdTest, TheLargestEventRoundTripsSealed) {
  const std::string event = Pattern(kMaxEventBytes);
  absl::StatusOr<base::UniqueFd> fd = MakeEventMemfd(event);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(::fcntl(fd->get(), F_GET_SEALS) & kEventMemfdSeals, kEventMemfdSeals);
  // Sealed: whoever holds the fd can neither write nor grow nor shrink it.
  EXPECT_LT(::pwrite(fd->get(), "x", 1, 0), 0);
  EXPECT_NE(::ftruncate(fd->get(), 1), 0);
  absl::StatusOr<std::string> read = ReadEventMemfd(fd->get(), event.size());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(*read == event);
}

TEST(EventMemfdTest, EmptyOrOversizedEventsAreRefused) {
  EXPECT_EQ(MakeEventMemfd("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeEventMemfd(std::string(kMaxEventBytes + 1, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EventMemfdTest, AnUnsealedMemfdIsRefused) {
  // Control: the same bytes sealed are read.
  absl::StatusOr<base::UniqueFd> sealed = MakeEventMemfd("[1,2,3]");
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  ASSERT_TRUE(ReadEventMemfd(sealed->get(), 7).ok());

  base::UniqueFd open(::memfd_create("event", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::write(open.get(), "[1,2,3]", 7), 7);
  absl::StatusOr<std::string> read = ReadEventMemfd(open.get(), 7);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("seals"), absl::string_view::npos) << read.status();
  // Sealed against writes only, it could still shrink under the reader.
  ASSERT_EQ(::fcntl(open.get(), F_ADD_SEALS, F_SEAL_WRITE), 0);
  EXPECT_FALSE(ReadEventMemfd(open.get(), 7).ok());
  // Not a memfd at all (a pipe has no seals).
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  base::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  EXPECT_FALSE(ReadEventMemfd(read_end.get(), 7).ok());
}

TEST(EventMemfdTest, ASizeOtherThanTheRunsIsRefused) {
  absl::StatusOr<base::UniqueFd> fd = MakeEventMemfd("[1,2,3]");
  ASSERT_TRUE(fd.ok()) << fd.status();
  for (uint64_t size : {uint64_t{0}, uint64_t{6}, uint64_t{8}, kMaxEventBytes + 1}) {
    absl::StatusOr<std::string> read = ReadEventMemfd(fd->get(), size);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << size;
  }
}

}  // namespace
}  // namespace zygo::wire
