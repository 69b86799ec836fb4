// Header encoding and its strict checks.
#include "agents/wire/frame.h"

#include <gtest/gtest.h>

#include <string>

namespace zygo::wire {
namespace {

std::string Encoded(const Frame& frame, size_t fds = 0) {
  absl::StatusOr<std::string> bytes = EncodeFrame(frame, fds);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.value_or("");
}

TEST(FrameTest, HeaderRoundTripsAndIsLittleEndian) {
  Frame frame{MessageType::kDone, 0x0102030405060708ull, "abc"};
  const std::string bytes = Encoded(frame, 2);
  ASSERT_EQ(bytes.size(), kHeaderSize + 3);
  EXPECT_EQ(bytes.substr(0, 4), "ZYGO");
  EXPECT_EQ(bytes[12], '\x08');  // request_id's low byte first.
  absl::StatusOr<FrameHeader> header = DecodeHeader(bytes);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->type, MessageType::kDone);
  EXPECT_EQ(header->request_id, 0x0102030405060708ull);
  EXPECT_EQ(header->payload_len, 3u);
  EXPECT_EQ(header->fd_count(), 2u);
}

TEST(FrameTest, RefusesBadMagicVersionTypeFlagsAndLength) {
  const std::string good = Encoded({MessageType::kPing, 7, "xy"});
  auto mutated = [&](size_t at, char value) {
    std::string bytes = good;
    bytes[at] = value;
    return DecodeHeader(bytes).status();
  };
  EXPECT_EQ(mutated(0, 'z').code(), absl::StatusCode::kInvalidArgument);   // magic
  EXPECT_EQ(mutated(4, 4).code(), absl::StatusCode::kFailedPrecondition);  // a v4 peer
  EXPECT_EQ(mutated(4, 6).code(), absl::StatusCode::kFailedPrecondition);  // a v6 peer
  EXPECT_EQ(mutated(4, 7).code(), absl::StatusCode::kFailedPrecondition);  // a v7 peer
  EXPECT_EQ(mutated(4, 9).code(), absl::StatusCode::kFailedPrecondition);  // version 9
  EXPECT_EQ(mutated(6, 0).code(), absl::StatusCode::kInvalidArgument);     // type 0
  EXPECT_EQ(mutated(6, 17).code(), absl::StatusCode::kInvalidArgument);    // type 17
  EXPECT_EQ(mutated(6, 99).code(), absl::StatusCode::kInvalidArgument);    // type 99
  EXPECT_EQ(mutated(9, 1).code(), absl::StatusCode::kInvalidArgument);     // reserved flag
  EXPECT_EQ(mutated(8, kMaxFdsPerFrame + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mutated(20, 3).code(), absl::StatusCode::kInvalidArgument);  // len != actual
  EXPECT_EQ(mutated(23, 1).code(), absl::StatusCode::kInvalidArgument);  // huge len
  EXPECT_FALSE(DecodeHeader(good.substr(0, kHeaderSize - 1)).ok());
  EXPECT_FALSE(DecodeHeader(good + "!").ok());
}

TEST(FrameTest, EncodeRefusesOversizedPayloadAndTooManyFds) {
  Frame frame{MessageType::kRun, 1, std::string(kMaxPayloadSize + 1, 'x')};
  EXPECT_EQ(EncodeFrame(frame, 0).status().code(), absl::StatusCode::kInvalidArgument);
  frame.payload.resize(kMaxPayloadSize);
  EXPECT_TRUE(EncodeFrame(frame, 0).ok());
  EXPECT_FALSE(EncodeFrame(frame, kMaxFdsPerFrame + 1).ok());
  EXPECT_FALSE(EncodeFrame({static_cast<MessageType>(42), 1, ""}, 0).ok());
}

}  // namespace
}  // namespace zygo::wire
