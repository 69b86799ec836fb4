// Every message type round-trips over a real socketpair, and decoders refuse bad values.
#include "agents/wire/messages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "agents/wire/channel.h"
#include "agents/wire/fields.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {
namespace {

using base::UniqueFd;

class MessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = MakeAgentSocketPair();
    ASSERT_TRUE(pair.ok()) << pair.status();
    supervisor_ = std::move(pair->first);
    agent_ = std::move(pair->second);
  }

  // Encodes, sends supervisor -> agent, receives and returns the received frame.
  template <typename Message>
  ReceivedFrame Transfer(const Message& message, std::vector<int> fds = {}) {
    absl::StatusOr<Frame> frame = Encode(message);
    EXPECT_TRUE(frame.ok()) << frame.status();
    if (!frame.ok()) return {};
    EXPECT_TRUE(SendFrame(supervisor_.get(), *frame, fds).ok());
    absl::StatusOr<ReceivedFrame> received = ReceiveFrame(agent_.get(), absl::Seconds(5));
    EXPECT_TRUE(received.ok()) << received.status();
    return received.ok() ? std::move(*received) : ReceivedFrame{};
  }

  UniqueFd supervisor_;
  UniqueFd agent_;
};

TEST_F(MessagesTest, Hello) {
  HelloMessage hello{"python", kProtocolVersion, 4242};
  absl::StatusOr<HelloMessage> got = DecodeHello(Transfer(hello));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->agent_kind, "python");
  EXPECT_EQ(got->protocol_version, kProtocolVersion);
  EXPECT_EQ(got->pid, 4242);
}

TEST_F(MessagesTest, RunWithStdioFds) {
  int pipes[3][2];
  std::vector<UniqueFd> owned;
  std::vector<int> fds;
  for (auto& p : pipes) {
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    owned.emplace_back(p[0]);
    owned.emplace_back(p[1]);
    fds.push_back(p[1]);
  }
  RunMessage run{77, "handler.py:main", std::string("{\"x\":1}\0bin", 11), 1500, FdLayout::kStdio};
  ReceivedFrame received = Transfer(run, fds);
  absl::StatusOr<RunMessage> got = DecodeRun(received);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->request_id, 77u);
  EXPECT_EQ(got->entry, "handler.py:main");
  EXPECT_EQ(got->event, run.event);
  EXPECT_EQ(got->deadline_ms, 1500u);
  EXPECT_EQ(got->fd_layout, FdLayout::kStdio);
  EXPECT_EQ(received.fds.size(), 3u);
}

TEST_F(MessagesTest, RunWithEmptyEventAndNoFds) {
  absl::StatusOr<RunMessage> got =
      DecodeRun(Transfer(RunMessage{1, "sha256:ab", "", 1, FdLayout::kNone}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->event, "");
}

TEST_F(MessagesTest, ForkedGoDone) {
  absl::StatusOr<ForkedMessage> forked = DecodeForked(Transfer(ForkedMessage{9, 31337}));
  ASSERT_TRUE(forked.ok()) << forked.status();
  EXPECT_EQ(forked->request_id, 9u);
  EXPECT_EQ(forked->pid, 31337);

  absl::StatusOr<GoMessage> go = DecodeGo(Transfer(GoMessage{9}));
  ASSERT_TRUE(go.ok()) << go.status();
  EXPECT_EQ(go->request_id, 9u);

  absl::StatusOr<DoneMessage> done =
      DecodeDone(Transfer(DoneMessage{9, ExitKind::kSignalled, 9, "partial"}));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->exit_kind, ExitKind::kSignalled);
  EXPECT_EQ(done->exit_code, 9);
  EXPECT_EQ(done->result, "partial");
}

TEST_F(MessagesTest, ErrorPingPong) {
  absl::StatusOr<ErrorMessage> error =
      DecodeError(Transfer(ErrorMessage{5, absl::StatusCode::kNotFound, "no such handler"}));
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(error->ToStatus(), absl::NotFoundError("no such handler"));
  EXPECT_EQ(error->request_id, 5u);

  absl::StatusOr<PingMessage> ping = DecodePing(Transfer(PingMessage{0xfeed}));
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(ping->nonce, 0xfeedu);
  absl::StatusOr<PongMessage> pong = DecodePong(Transfer(PongMessage{0xfeed}));
  ASSERT_TRUE(pong.ok());
  EXPECT_EQ(pong->nonce, 0xfeedu);
}

TEST(MessagesValidationTest, EncodeRefusesBadValues) {
  EXPECT_FALSE(Encode(HelloMessage{"Python!", kProtocolVersion, 1}).ok());
  EXPECT_FALSE(Encode(HelloMessage{"", kProtocolVersion, 1}).ok());
  EXPECT_FALSE(Encode(HelloMessage{"python", kProtocolVersion, 0}).ok());
  EXPECT_FALSE(Encode(RunMessage{0, "h", "", 10, FdLayout::kNone}).ok());  // request id 0
  EXPECT_FALSE(Encode(RunMessage{1, "", "", 10, FdLayout::kNone}).ok());
  EXPECT_FALSE(Encode(RunMessage{1, "h", "", 0, FdLayout::kNone}).ok());
  EXPECT_FALSE(
      Encode(RunMessage{1, "h", std::string(kMaxPayloadSize, 'e'), 10, FdLayout::kNone}).ok());
  EXPECT_FALSE(Encode(ForkedMessage{1, -5}).ok());
  EXPECT_FALSE(Encode(DoneMessage{1, ExitKind::kExited, 256, ""}).ok());
  EXPECT_FALSE(Encode(DoneMessage{1, ExitKind::kSignalled, 0, ""}).ok());
  EXPECT_FALSE(Encode(ErrorMessage{1, absl::StatusCode::kOk, ""}).ok());
  EXPECT_FALSE(Encode(GoMessage{0}).ok());
}

TEST(MessagesValidationTest, DecodersRefuseWrongTypeFdsAndFields) {
  ReceivedFrame received;
  received.frame = *Encode(GoMessage{3});
  EXPECT_FALSE(DecodeDone(received).ok());  // Wrong type.
  EXPECT_TRUE(DecodeGo(received).ok());
  received.frame.payload = FieldWriter().AddU64(1, 1).Finish();
  EXPECT_FALSE(DecodeGo(received).ok());  // Go has no fields.

  // A Run declaring stdio must carry exactly three fds; anything else carries none.
  received.frame = *Encode(RunMessage{1, "h", "", 10, FdLayout::kStdio});
  EXPECT_FALSE(DecodeRun(received).ok());
  received.frame = *Encode(ForkedMessage{1, 2});
  received.fds.emplace_back(::dup(0));
  EXPECT_FALSE(DecodeForked(received).ok());
  received.fds.clear();

  // Values past the narrowing boundary are refused, not wrapped.
  received.frame.payload = FieldWriter().AddU64(1, (1ull << 32) + 5).Finish();
  EXPECT_FALSE(DecodeForked(received).ok());
  received.frame = {MessageType::kDone, 1,
                    FieldWriter().AddU64(1, 1).AddU64(2, 0xFFFFFFFFull).Finish()};
  EXPECT_FALSE(DecodeDone(received).ok());
  received.frame = {MessageType::kError, 1, FieldWriter().AddU64(1, 17).Finish()};
  EXPECT_FALSE(DecodeError(received).ok());
  received.frame = {MessageType::kHello, 1, Encode(HelloMessage{"x", 1, 1})->payload};
  EXPECT_FALSE(DecodeHello(received).ok());  // Hello's request id must be 0.
}

}  // namespace
}  // namespace zygo::wire
