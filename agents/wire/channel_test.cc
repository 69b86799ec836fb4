// SendFrame/ReceiveFrame over a real socketpair: fds, CLOEXEC, sender credentials,
// malformed datagrams without fd leaks, EOF and timeouts.
#include "agents/wire/channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "agents/wire/frame.h"
#include "agents/wire/wire_testing.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {
namespace {

using base::UniqueFd;
using testing::CountOpenFds;
using testing::IsCloexec;
using testing::SendRawDatagram;

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = MakeAgentSocketPair();
    ASSERT_TRUE(pair.ok()) << pair.status();
    a_ = std::move(pair->first);
    b_ = std::move(pair->second);
  }

  // Sends raw `bytes` with `fds` on a_, expects ReceiveFrame on b_ to fail with `code`, and
  // checks that no received fd stays open.
  void ExpectRefused(const std::string& bytes, int nfds, absl::StatusCode code,
                     absl::string_view reason = "") {
    std::vector<UniqueFd> owned;
    std::vector<int> fds;
    for (int i = 0; i < nfds; ++i) {
      owned.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      fds.push_back(owned.back().get());
    }
    ASSERT_TRUE(SendRawDatagram(a_.get(), bytes, fds).ok());
    const int before = CountOpenFds();
    absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
    EXPECT_EQ(received.status().code(), code) << received.status();
    EXPECT_NE(received.status().message().find(reason), absl::string_view::npos)
        << received.status();
    EXPECT_EQ(CountOpenFds(), before);
  }

  static std::string Bytes(const Frame& frame, size_t declared_fds = 0) {
    return EncodeFrame(frame, declared_fds).value();
  }

  UniqueFd a_;
  UniqueFd b_;
};

TEST_F(ChannelTest, SocketPairIsCloexecSeqpacket) {
  EXPECT_TRUE(IsCloexec(a_.get()));
  EXPECT_TRUE(IsCloexec(b_.get()));
  int type = 0;
  socklen_t len = sizeof(type);
  ASSERT_EQ(::getsockopt(a_.get(), SOL_SOCKET, SO_TYPE, &type, &len), 0);
  EXPECT_EQ(type, SOCK_SEQPACKET);
}

TEST_F(ChannelTest, PassedPipeIsUsableAndCloexec) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);  // Deliberately without O_CLOEXEC: the receiver must add it.
  UniqueFd read_end(p[0]);
  UniqueFd write_end(p[1]);
  const int write_fd = write_end.get();
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kRun, 1, "payload"}, {&write_fd, 1}).ok());
  write_end.Reset();  // Only the received copy keeps the pipe open now.

  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->frame.payload, "payload");
  ASSERT_EQ(received->fds.size(), 1u);
  EXPECT_TRUE(IsCloexec(received->fds[0].get()));
  ASSERT_EQ(::write(received->fds[0].get(), "hi", 2), 2);
  received->fds.clear();  // Closing the last write end gives the reader EOF after "hi".
  char buf[8] = {};
  EXPECT_EQ(::read(read_end.get(), buf, sizeof(buf)), 2);
  EXPECT_EQ(std::string(buf, 2), "hi");
  EXPECT_EQ(::read(read_end.get(), buf, sizeof(buf)), 0);
}

TEST_F(ChannelTest, FramesKeepOrderAndBoundaries) {
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPing, id, std::string(id, 'p')}, {}).ok());
  }
  for (uint64_t id = 1; id <= 3; ++id) {
    absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
    ASSERT_TRUE(received.ok()) << received.status();
    EXPECT_EQ(received->frame.request_id, id);
    EXPECT_EQ(received->frame.payload, std::string(id, 'p'));
  }
}

TEST_F(ChannelTest, LargestPayloadFits) {
  Frame frame{MessageType::kDone, 1, std::string(kMaxPayloadSize, 'r')};
  ASSERT_TRUE(SendFrame(a_.get(), frame, {}).ok());
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->frame.payload.size(), kMaxPayloadSize);
}

TEST_F(ChannelTest, SendRefusesTooManyOrInvalidFds) {
  std::vector<int> fds(kMaxFdsPerFrame + 1, 0);
  EXPECT_FALSE(SendFrame(a_.get(), {MessageType::kRun, 1, ""}, fds).ok());
  const int bad = -1;
  EXPECT_FALSE(SendFrame(a_.get(), {MessageType::kRun, 1, ""}, {&bad, 1}).ok());
}

TEST_F(ChannelTest, BadMagicWithFdsIsRefusedWithoutLeak) {
  std::string bytes = Bytes({MessageType::kRun, 1, "x"}, 2);
  bytes[0] = 'X';
  ExpectRefused(bytes, 2, absl::StatusCode::kInvalidArgument);
}

TEST_F(ChannelTest, BadVersionIsRefusedWithoutLeak) {
  std::string bytes = Bytes({MessageType::kRun, 1, "x"}, 1);
  bytes[4] = 9;
  ExpectRefused(bytes, 1, absl::StatusCode::kFailedPrecondition);
}

TEST_F(ChannelTest, OversizedDatagramIsTruncatedAndRefused) {
  // A valid header claiming the maximum, followed by more bytes than any frame may hold.
  std::string bytes = Bytes({MessageType::kDone, 1, std::string(kMaxPayloadSize, 'o')}, 1);
  bytes.append(100, 'o');
  ExpectRefused(bytes, 1, absl::StatusCode::kInvalidArgument, "datagram truncated");
}

TEST_F(ChannelTest, ShortDatagramIsRefused) {
  ExpectRefused(Bytes({MessageType::kPing, 1, ""}).substr(0, 10), 1,
                absl::StatusCode::kInvalidArgument);
}

TEST_F(ChannelTest, UndeclaredFdsAreRefusedWithoutLeak) {
  ExpectRefused(Bytes({MessageType::kRun, 1, ""}, 1), 3, absl::StatusCode::kInvalidArgument);
  ExpectRefused(Bytes({MessageType::kRun, 1, ""}, 2), 0, absl::StatusCode::kInvalidArgument);
}

TEST_F(ChannelTest, MoreFdsThanAllowedIsCtruncAndNoLeak) {
  ExpectRefused(Bytes({MessageType::kRun, 1, ""}, kMaxFdsPerFrame), kMaxFdsPerFrame + 3,
                absl::StatusCode::kInvalidArgument, "control data truncated");
}

TEST_F(ChannelTest, NextFrameAfterARefusedOneIsFine) {
  std::string bad = Bytes({MessageType::kPing, 1, ""});
  bad[1] = '?';
  ASSERT_TRUE(SendRawDatagram(a_.get(), bad, {}).ok());
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPong, 2, ""}, {}).ok());
  EXPECT_FALSE(ReceiveFrame(b_.get(), absl::Seconds(5)).ok());
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->frame.request_id, 2u);
}

TEST_F(ChannelTest, PeerClosedIsCleanEof) {
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPing, 1, ""}, {}).ok());
  a_.Reset();
  EXPECT_TRUE(ReceiveFrame(b_.get(), absl::Seconds(5)).ok());  // Queued data still arrives.
  absl::StatusOr<ReceivedFrame> eof = ReceiveFrame(b_.get(), absl::Seconds(5));
  EXPECT_TRUE(IsPeerClosed(eof.status())) << eof.status();
  eof = ReceiveFrame(b_.get(), absl::InfiniteDuration());  // EOF is sticky, never blocks.
  EXPECT_TRUE(IsPeerClosed(eof.status())) << eof.status();
  absl::Status send = SendFrame(b_.get(), {MessageType::kPing, 1, ""}, {});
  EXPECT_TRUE(IsPeerClosed(send)) << send;  // EPIPE, and no SIGPIPE killed us.
}

TEST_F(ChannelTest, TimeoutIsHonoured) {
  const absl::Time start = absl::Now();
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Milliseconds(150));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(received.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(waited, absl::Milliseconds(150));
  EXPECT_LT(waited, absl::Seconds(2));
  EXPECT_EQ(ReceiveFrame(b_.get(), absl::ZeroDuration()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ChannelTest, SenderPidIsTheRealSenderWithPassCred) {
  ASSERT_TRUE(EnablePeerCredentials(b_.get()).ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child claims another pid in the payload; only the kernel's credentials count.
    const bool sent = SendFrame(a_.get(), {MessageType::kPing, 1, "1"}, {}).ok();
    ::_exit(sent ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->sender_pid, child);
  EXPECT_NE(received->sender_pid, ::getpid());

  // And from this process: its own pid.
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPing, 2, ""}, {}).ok());
  received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->sender_pid, ::getpid());
}

TEST_F(ChannelTest, SenderPidIsZeroWithoutPassCred) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(SendFrame(a_.get(), {MessageType::kPing, 1, ""}, {}).ok() ? 0 : 1);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->sender_pid, 0);
}

TEST_F(ChannelTest, CredentialsAndMaximumFdsTogether) {
  ASSERT_TRUE(EnablePeerCredentials(b_.get()).ok());
  std::vector<UniqueFd> owned;
  std::vector<int> fds;
  for (size_t i = 0; i < kMaxFdsPerFrame; ++i) {
    owned.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    fds.push_back(owned.back().get());
  }
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kRun, 1, ""}, fds).ok());
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::Seconds(5));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->fds.size(), kMaxFdsPerFrame);
  EXPECT_EQ(received->sender_pid, ::getpid());
}

TEST_F(ChannelTest, TooManyFdsWithCredentialsIsCtruncAndNoLeak) {
  ASSERT_TRUE(EnablePeerCredentials(b_.get()).ok());
  ExpectRefused(Bytes({MessageType::kRun, 1, ""}, kMaxFdsPerFrame), kMaxFdsPerFrame + 1,
                absl::StatusCode::kInvalidArgument, "control data truncated");
}

TEST_F(ChannelTest, ZeroTimeoutReturnsQueuedFrame) {
  ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPing, 4, ""}, {}).ok());
  // A frame already queued is returned even with no time to wait.
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::ZeroDuration());
  EXPECT_TRUE(received.ok()) << received.status();
}

// Waiting forever is a blocking recvmsg: a frame sent later still arrives, whole.
TEST_F(ChannelTest, InfiniteWaitReceivesAFrameSentLater) {
  std::thread sender([this] {
    ::usleep(50'000);
    ASSERT_TRUE(SendFrame(a_.get(), {MessageType::kPing, 9, "later"}, {}).ok());
  });
  absl::StatusOr<ReceivedFrame> received = ReceiveFrame(b_.get(), absl::InfiniteDuration());
  sender.join();
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->frame.request_id, 9u);
  EXPECT_EQ(received->frame.payload, "later");
}

}  // namespace
}  // namespace zygo::wire
