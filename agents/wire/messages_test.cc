// Every message type round-trips over a real socketpair, and decoders refuse bad values.
#include "agents/wire/messages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
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
  EXPECT_EQ(got->code, "");
}

TEST_F(MessagesTest, RunWithCode) {
  const std::string code = "def handler(event):\n    return event\n";
  RunMessage run{3, "sha256:0123", "[1]", 100, FdLayout::kNone, code};
  absl::StatusOr<RunMessage> got = DecodeRun(Transfer(run));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->code, code);
  EXPECT_EQ(got->event, "[1]");
  EXPECT_EQ(got->entry, "sha256:0123");

  // The code shares the payload limit with the event: together they must fit one frame.
  run.code = std::string(kMaxPayloadSize / 2, 'c');
  run.event = std::string(kMaxPayloadSize / 2, 'e');
  EXPECT_FALSE(Encode(run).ok());
  run.event.clear();
  got = DecodeRun(Transfer(run));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->code.size(), kMaxPayloadSize / 2);
}

// v6: an event that does not fit in the frame rides in a memfd after the layout's fds; the
// Run says how big it is, and the fd count follows.
TEST_F(MessagesTest, RunWithItsEventInAMemfd) {
  UniqueFd stdio[3], memfd(::memfd_create("event", MFD_CLOEXEC));
  for (UniqueFd& fd : stdio) fd.Reset(::memfd_create("stdio", MFD_CLOEXEC));
  RunMessage run{5, "handler.py:main", "", 100, FdLayout::kStdio};
  run.event_fd_size = kMaxEventBytes;
  EXPECT_EQ(RunFdCount(run), 4u);
  ReceivedFrame received =
      Transfer(run, {stdio[0].get(), stdio[1].get(), stdio[2].get(), memfd.get()});
  absl::StatusOr<RunMessage> got = DecodeRun(received);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->event_fd_size, kMaxEventBytes);
  EXPECT_EQ(got->event, "");

  // The fd count must match: the layout's three without the memfd is refused.
  ReceivedFrame short_of_one = Transfer(run, {stdio[0].get(), stdio[1].get(), stdio[2].get()});
  EXPECT_FALSE(DecodeRun(short_of_one).ok());
  // No event both ways, none over the limit.
  run.event = "1";
  EXPECT_FALSE(Encode(run).ok());
  run.event.clear();
  run.event_fd_size = kMaxEventBytes + 1;
  EXPECT_FALSE(Encode(run).ok());
  // Without a memfd, a plain Run counts only its layout's fds.
  run.event_fd_size = 0;
  EXPECT_EQ(RunFdCount(run), 3u);
}

TEST_F(MessagesTest, SpawnAndZygoteDone) {
  absl::StatusOr<SpawnMessage> spawn = DecodeSpawn(Transfer(SpawnMessage{9}));
  ASSERT_TRUE(spawn.ok()) << spawn.status();
  EXPECT_EQ(spawn->spare_id, 9u);

  absl::StatusOr<DoneMessage> reaped =
      DecodeDone(Transfer(DoneMessage{9, ExitKind::kExited, 3, ""}));
  ASSERT_TRUE(reaped.ok()) << reaped.status();
  EXPECT_EQ(reaped->exit_kind, ExitKind::kExited);
  EXPECT_EQ(reaped->exit_code, 3);
  EXPECT_EQ(reaped->result, "");
}

TEST_F(MessagesTest, ForkedCarriesItsFd) {
  auto child_channel = MakeAgentSocketPair();
  ASSERT_TRUE(child_channel.ok()) << child_channel.status();
  const int handed = child_channel->first.get();
  ReceivedFrame received = Transfer(ForkedMessage{9, 31337}, {handed});
  child_channel->first.Reset();  // The received copy is now the only supervisor end.
  absl::StatusOr<ForkedMessage> forked = DecodeForked(received);
  ASSERT_TRUE(forked.ok()) << forked.status();
  EXPECT_EQ(forked->request_id, 9u);
  EXPECT_EQ(forked->pid, 31337);
  ASSERT_EQ(received.fds.size(), kForkedFdCount);

  // The fd is a working end of the child channel, not just a number.
  ASSERT_TRUE(SendFrame(received.fds[0].get(), *Encode(PingMessage{5}), {}).ok());
  absl::StatusOr<ReceivedFrame> ping = ReceiveFrame(child_channel->second.get(), absl::Seconds(5));
  ASSERT_TRUE(ping.ok()) << ping.status();
  EXPECT_EQ(ping->frame.type, MessageType::kPing);
}

TEST_F(MessagesTest, ChildDone) {
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

TEST_F(MessagesTest, FailedRoundTrip) {
  FailedMessage failed{12, "ZeroDivisionError", "division by zero",
                       "Traceback (most recent call last):\n  File \"h.py\", line 2\n"};
  absl::StatusOr<FailedMessage> got = DecodeFailed(Transfer(failed));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->request_id, 12u);
  EXPECT_EQ(got->error_type, "ZeroDivisionError");
  EXPECT_EQ(got->message, "division by zero");
  EXPECT_EQ(got->traceback, failed.traceback);

  // Only the type is required; the largest legal fields fit one frame.
  got = DecodeFailed(Transfer(FailedMessage{1, "EventError", "", ""}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->message, "");
  FailedMessage largest{2, std::string(kMaxErrorTypeSize, 't'),
                        std::string(kMaxFailedMessageSize, 'm'),
                        std::string(kMaxTracebackSize, 'b')};
  got = DecodeFailed(Transfer(largest));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->traceback.size(), kMaxTracebackSize);
}

TEST_F(MessagesTest, CompiledRoundTripAndRunBytecode) {
  absl::StatusOr<CompiledMessage> got =
      DecodeCompiled(Transfer(CompiledMessage{7, std::string("\xe3\0code", 6)}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->request_id, 7u);
  EXPECT_EQ(got->bytecode, std::string("\xe3\0code", 6));
  EXPECT_FALSE(Encode(CompiledMessage{7, ""}).ok());   // nothing compiled
  EXPECT_FALSE(Encode(CompiledMessage{0, "b"}).ok());  // request id 0

  RunMessage run{3, "sha256:ab", "", 10, FdLayout::kNone};
  run.bytecode = "marshalled";
  absl::StatusOr<Frame> frame = Encode(run);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ReceivedFrame received;
  received.frame = *frame;
  absl::StatusOr<RunMessage> decoded = DecodeRun(received);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->bytecode, "marshalled");
  EXPECT_EQ(decoded->code, "");
  run.code = "def handler(e): pass";  // both: refused
  EXPECT_FALSE(Encode(run).ok());
}

TEST_F(MessagesTest, TouchedAndPrefaultRoundTrip) {
  const std::vector<PageRun> runs = {{0x7f0000001000, 3, true}, {0x400000, 1, false}};
  absl::StatusOr<TouchedMessage> touched = DecodeTouched(Transfer(TouchedMessage{9, runs}));
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_EQ(touched->request_id, 9u);
  EXPECT_EQ(touched->runs, runs);
  touched = DecodeTouched(Transfer(TouchedMessage{9, {}}));  // nothing touched: allowed
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_TRUE(touched->runs.empty());

  absl::StatusOr<PrefaultMessage> prefault = DecodePrefault(Transfer(PrefaultMessage{runs}));
  ASSERT_TRUE(prefault.ok()) << prefault.status();
  EXPECT_EQ(prefault->runs, runs);

  RunMessage run{3, "handler.py:main", "", 10, FdLayout::kNone};
  for (bool report : {false, true}) {
    run.report_touched = report;
    absl::StatusOr<RunMessage> decoded = DecodeRun(Transfer(run));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->report_touched, report);
  }
}

TEST(MessagesValidationTest, PageRunLimits) {
  EXPECT_FALSE(Encode(PrefaultMessage{}).ok());                               // nothing to take
  EXPECT_FALSE(Encode(TouchedMessage{0, {}}).ok());                           // request id 0
  EXPECT_FALSE(Encode(PrefaultMessage{{{0x1001, 1, true}}}).ok());            // not page-aligned
  EXPECT_FALSE(Encode(PrefaultMessage{{{0x1000, 0, true}}}).ok());            // no pages
  EXPECT_FALSE(Encode(PrefaultMessage{{{~uint64_t{0xFFF}, 2, true}}}).ok());  // wraps
  std::vector<PageRun> too_many(kMaxPageRuns + 1, PageRun{0x1000, 1, false});
  EXPECT_FALSE(Encode(PrefaultMessage{too_many}).ok());
  EXPECT_FALSE(Encode(PrefaultMessage{{{0x1000, kMaxPageRunPages + 1, true}}}).ok());
  EXPECT_TRUE(Encode(PrefaultMessage{{{0x1000, kMaxPageRunPages, true}}}).ok());

  // Decoders see raw bytes: a run whose flags are not 0 or 1, a torn record, an id.
  auto frame_of = [](MessageType type, uint64_t id, std::string runs) {
    ReceivedFrame received;
    received.frame = {type, id, FieldWriter().AddBytes(1, runs).Finish()};
    return received;
  };
  std::string record("\x00\x10\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00", 16);
  EXPECT_TRUE(DecodePrefault(frame_of(MessageType::kPrefault, 0, record)).ok());
  EXPECT_FALSE(DecodePrefault(frame_of(MessageType::kPrefault, 1, record)).ok());
  EXPECT_FALSE(DecodePrefault(frame_of(MessageType::kPrefault, 0, record.substr(0, 15))).ok());
  std::string bad_flags = record;
  bad_flags[12] = 2;
  EXPECT_FALSE(DecodePrefault(frame_of(MessageType::kPrefault, 0, bad_flags)).ok());
  EXPECT_FALSE(DecodeTouched(frame_of(MessageType::kTouched, 0, record)).ok());
}

TEST(MessagesValidationTest, FailedLimits) {
  EXPECT_FALSE(Encode(FailedMessage{0, "E", "", ""}).ok());  // request id 0
  EXPECT_FALSE(Encode(FailedMessage{1, "", "m", ""}).ok());  // no type
  EXPECT_FALSE(Encode(FailedMessage{1, std::string(kMaxErrorTypeSize + 1, 't'), "", ""}).ok());
  EXPECT_FALSE(Encode(FailedMessage{1, "E", std::string(kMaxFailedMessageSize + 1, 'm'), ""}).ok());
  EXPECT_FALSE(Encode(FailedMessage{1, "E", "", std::string(kMaxTracebackSize + 1, 'b')}).ok());

  // A decoder refuses the same over-limit fields from a peer that skipped validation.
  ReceivedFrame received;
  received.frame = {
      MessageType::kFailed, 1,
      FieldWriter().AddBytes(1, "E").AddBytes(3, std::string(kMaxTracebackSize + 1, 'b')).Finish()};
  EXPECT_FALSE(DecodeFailed(received).ok());
  received.frame.payload = FieldWriter().AddBytes(2, "message without a type").Finish();
  EXPECT_FALSE(DecodeFailed(received).ok());
  received.frame.payload = FieldWriter().AddBytes(1, "").Finish();
  EXPECT_FALSE(DecodeFailed(received).ok());
  received.frame = {MessageType::kFailed, 0, FieldWriter().AddBytes(1, "E").Finish()};
  EXPECT_FALSE(DecodeFailed(received).ok());
  received.frame.request_id = 1;
  EXPECT_TRUE(DecodeFailed(received).ok());
}

TEST(MessagesValidationTest, HeadCutsAtTheLimitButNotInsideACharacter) {
  EXPECT_EQ(Head("short", 10), "short");
  EXPECT_EQ(Head("abcdef", 3), "abc");
  EXPECT_EQ(Head("ab\xc3\xa9", 3), "ab");  // "abé": the cut would split é
  EXPECT_EQ(Head("ab\xc3\xa9", 4), "ab\xc3\xa9");
}

TEST(MessagesValidationTest, ErrorFromStatusKeepsTheCodeAndEncodesALongMessage) {
  const ErrorMessage error =
      ErrorFromStatus(7, absl::NotFoundError(std::string(kMaxErrorMessageSize + 5, 'm')));
  EXPECT_EQ(error.request_id, 7u);
  EXPECT_EQ(error.code, absl::StatusCode::kNotFound);
  EXPECT_EQ(error.message, std::string(kMaxErrorMessageSize, 'm'));
  EXPECT_TRUE(Encode(error).ok());
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
  EXPECT_FALSE(Encode(SpawnMessage{0}).ok());
}

TEST(MessagesValidationTest, DecodersRefuseWrongTypeFdsAndFields) {
  ReceivedFrame received;
  received.frame = *Encode(SpawnMessage{3});
  EXPECT_FALSE(DecodeDone(received).ok());  // Wrong type.
  EXPECT_TRUE(DecodeSpawn(received).ok());
  received.frame.payload = FieldWriter().AddU64(1, 1).Finish();
  EXPECT_FALSE(DecodeSpawn(received).ok());  // Spawn has no fields.
  received.frame = {MessageType::kSpawn, 0, ""};
  EXPECT_FALSE(DecodeSpawn(received).ok());  // Spare id 0 is the connection.

  // A Run declaring stdio must carry exactly three fds; Forked exactly one; Spawn none.
  received.frame = *Encode(RunMessage{1, "h", "", 10, FdLayout::kStdio});
  EXPECT_FALSE(DecodeRun(received).ok());
  received.frame = *Encode(ForkedMessage{1, 2});
  EXPECT_FALSE(DecodeForked(received).ok());  // No fd.
  received.fds.emplace_back(::dup(0));
  EXPECT_TRUE(DecodeForked(received).ok());
  received.fds.emplace_back(::dup(0));
  EXPECT_FALSE(DecodeForked(received).ok());  // Two fds.
  received.frame = *Encode(SpawnMessage{1});
  EXPECT_FALSE(DecodeSpawn(received).ok());
  received.fds.clear();

  // Values past the narrowing boundary are refused, not wrapped.
  received.frame = {MessageType::kForked, 1, FieldWriter().AddU64(1, (1ull << 32) + 5).Finish()};
  received.fds.emplace_back(::dup(0));
  EXPECT_FALSE(DecodeForked(received).ok());
  received.fds.clear();
  received.frame = {MessageType::kDone, 1,
                    FieldWriter().AddU64(1, 1).AddU64(2, 0xFFFFFFFFull).Finish()};
  EXPECT_FALSE(DecodeDone(received).ok());
  received.frame = {MessageType::kError, 1, FieldWriter().AddU64(1, 17).Finish()};
  EXPECT_FALSE(DecodeError(received).ok());
  received.frame = {MessageType::kHello, 1, Encode(HelloMessage{"x", 1, 1})->payload};
  EXPECT_FALSE(DecodeHello(received).ok());  // Hello's request id must be 0.
}

TEST_F(MessagesTest, JoinCarriesItsFilesAndJoinedAnswersIt) {
  UniqueFd first(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  UniqueFd second(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  ReceivedFrame join = Transfer(JoinMessage{}, {first.get(), second.get()});
  EXPECT_TRUE(DecodeJoin(join).ok());
  EXPECT_EQ(join.fds.size(), 2u);
  ReceivedFrame joined = Transfer(JoinedMessage{});
  EXPECT_TRUE(DecodeJoined(joined).ok());
  EXPECT_FALSE(DecodeJoin(joined).ok());  // Wrong type.
}

TEST(MessagesValidationTest, JoinNeedsOneToFourFilesAndNoRequestOrFields) {
  ReceivedFrame received;
  received.frame = *Encode(JoinMessage{});
  EXPECT_FALSE(DecodeJoin(received).ok());  // No file to join.
  for (size_t i = 0; i < kMaxFdsPerFrame; ++i) {
    received.fds.emplace_back(::dup(0));
    EXPECT_TRUE(DecodeJoin(received).ok()) << received.fds.size() << " fds";
  }
  received.frame = {MessageType::kJoin, 7, ""};
  EXPECT_FALSE(DecodeJoin(received).ok());  // A request id.
  received.frame = {MessageType::kJoin, 0, FieldWriter().AddU64(1, 1).Finish()};
  EXPECT_FALSE(DecodeJoin(received).ok());  // A field.
  received.frame = *Encode(JoinedMessage{});
  EXPECT_FALSE(DecodeJoined(received).ok());  // Joined carries no fd.
  received.fds.clear();
  EXPECT_TRUE(DecodeJoined(received).ok());
  received.frame = {MessageType::kJoined, 3, ""};
  EXPECT_FALSE(DecodeJoined(received).ok());
}

TEST(MessagesValidationTest, IsolateHasNoRequestFieldOrFd) {
  ReceivedFrame received;
  received.frame = *Encode(IsolateMessage{});
  EXPECT_EQ(received.frame.type, MessageType::kIsolate);
  EXPECT_TRUE(DecodeIsolate(received).ok());
  received.frame = {MessageType::kIsolate, 5, ""};
  EXPECT_FALSE(DecodeIsolate(received).ok());  // A request id.
  received.frame = {MessageType::kIsolate, 0, FieldWriter().AddU64(1, 1).Finish()};
  EXPECT_FALSE(DecodeIsolate(received).ok());  // A field.
  received.frame = *Encode(IsolateMessage{});
  received.fds.emplace_back(::dup(0));
  EXPECT_FALSE(DecodeIsolate(received).ok());  // An fd.
  received.fds.clear();
  received.frame = *Encode(JoinedMessage{});
  EXPECT_FALSE(DecodeIsolate(received).ok());  // Wrong type.
}

}  // namespace
}  // namespace zygo::wire
