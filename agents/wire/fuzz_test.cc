// Random datagrams into ReceiveFrame and every decoder: errors are fine, crashes and fd
// leaks are not. Run under --config=asan as well.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "agents/wire/channel.h"
#include "agents/wire/frame.h"
#include "agents/wire/messages.h"
#include "agents/wire/wire_testing.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {
namespace {

using base::UniqueFd;

// Mostly-valid datagrams reach deeper than pure noise: a real header (random type, id and
// declared fd count) followed by random bytes, with random header bytes flipped.
std::string RandomDatagram(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string payload(std::uniform_int_distribution<int>(0, 200)(rng), '\0');
  for (char& c : payload) c = static_cast<char>(byte(rng));
  Frame frame;
  frame.type = static_cast<MessageType>(std::uniform_int_distribution<int>(1, 9)(rng));
  frame.request_id = rng() % 4;
  frame.payload = payload;
  std::string bytes = EncodeFrame(frame, rng() % (kMaxFdsPerFrame + 1)).value();
  const int mode = rng() % 4;
  if (mode == 0) {
    bytes[rng() % bytes.size()] = static_cast<char>(byte(rng));
  } else if (mode == 1) {
    bytes.resize(rng() % (bytes.size() + 1));
    if (bytes.empty()) bytes = "z";  // An empty datagram would read as EOF.
  }
  return bytes;
}

void DecodeAll(const ReceivedFrame& received) {
  // Results are ignored: only crashes, sanitizer reports and leaks matter here.
  (void)DecodeHello(received);
  (void)DecodeRun(received);
  (void)DecodeForked(received);
  (void)DecodeSpawn(received);
  (void)DecodeDone(received);
  (void)DecodeError(received);
  (void)DecodePing(received);
  (void)DecodePong(received);
  (void)DecodeFailed(received);
  (void)DecodeCompiled(received);
  (void)DecodeTouched(received);
  (void)DecodePrefault(received);
}

class FuzzChannelTest : public ::testing::TestWithParam<bool> {};

// Both control-buffer layouts: plain, and with SO_PASSCRED (credentials ride with every
// datagram and take room in front of the fds).
INSTANTIATE_TEST_SUITE_P(PassCred, FuzzChannelTest, ::testing::Bool());

TEST_P(FuzzChannelTest, RandomDatagramsNeverCrashOrLeak) {
  auto pair = MakeAgentSocketPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  if (GetParam()) {
    ASSERT_TRUE(EnablePeerCredentials(pair->second.get()).ok());
  }
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(null_fd.valid());
  std::mt19937_64 rng(20261130);
  const int before = testing::CountOpenFds();
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::vector<int> fds(rng() % (kMaxFdsPerFrame + 2), null_fd.get());
    ASSERT_TRUE(testing::SendRawDatagram(pair->first.get(), RandomDatagram(rng), fds).ok());
    absl::StatusOr<ReceivedFrame> received = ReceiveFrame(pair->second.get(), absl::Seconds(5));
    if (received.ok()) {
      ++accepted;
      EXPECT_EQ(received->sender_pid, GetParam() ? ::getpid() : 0);
      DecodeAll(*received);
    } else {
      ASSERT_NE(received.status().code(), absl::StatusCode::kDeadlineExceeded);
    }
  }
  EXPECT_EQ(testing::CountOpenFds(), before);
  EXPECT_GT(accepted, 0);  // The generator does reach the decoders.
}

TEST(FuzzTest, RandomPayloadsIntoDecodersNeverCrash) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    ReceivedFrame received;
    received.frame.type = static_cast<MessageType>(1 + rng() % 12);
    received.frame.request_id = rng() % 3;
    // Payloads made of plausible field headers, so the field parser's paths get exercised.
    std::string payload;
    const int fields = rng() % 5;
    for (int f = 0; f < fields; ++f) {
      const uint16_t tag = rng() % 8;
      // Multiples of 16 now and then: whole page-run records for Touched and Prefault.
      const uint32_t len = (rng() % 4 == 0)   ? static_cast<uint32_t>(rng())
                           : (rng() % 3 == 0) ? 16 * (rng() % 3)
                                              : rng() % 12;
      payload.push_back(static_cast<char>(tag));
      payload.push_back(0);
      for (int b = 0; b < 4; ++b) payload.push_back(static_cast<char>(len >> (8 * b)));
      for (uint32_t b = 0; b < std::min<uint32_t>(len, 32); ++b) {
        payload.push_back(static_cast<char>(rng()));
      }
    }
    received.frame.payload = payload;
    DecodeAll(received);
  }
}

}  // namespace
}  // namespace zygo::wire
