// The agent conformance suite: every agent (today zygo-agent-python) runs as a plain
// subprocess on a zygote channel and must speak protocol v6 the same way: Hello; Spawn ->
// Forked from a real child with one fd; Run -> Done/Failed; Done(spare) after the reap;
// per-spare reseeding, temp dirs and Landlock scoping; EOF -> exit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/conformance/agent_kinds.h"
#include "agents/conformance/agent_process.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"
#include "agents/wire/messages.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/landlock.h"
#include "core/base/unique_fd.h"
#include "nlohmann/json.hpp"

namespace zygo::agents::conformance {
namespace {

using base::UniqueFd;
using wire::FdLayout;
using wire::MessageType;

int LandlockAbi() {
  const int abi = base::sys::RawLandlockAbiVersion();
  return abi < 0 ? 0 : abi;
}

pid_t ParentOf(pid_t pid) { return base::sys::ReadParentPid(pid).value_or(-1); }

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  return text;
}

// zlib's CRC-32 (reflected, polynomial 0xEDB88320), bit by bit.
uint32_t Crc32(absl::string_view bytes) {
  uint32_t crc = 0xFFFFFFFF;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320 & (0 - (crc & 1)));
  }
  return ~crc;
}

wire::RunMessage MakeRun(const std::string& event, FdLayout layout = FdLayout::kNone) {
  static uint64_t request_id = 0;
  return wire::RunMessage{++request_id, "handler.py:handle", event, 10000, layout, ""};
}

class ConformanceTest : public ::testing::TestWithParam<AgentKind> {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::replace(dir_.begin(), dir_.end(), '/', '_');
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", dir_.substr(dir_.rfind('_') + 1), "-",
                        ::getpid(), "-", ++instance_);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_;
    std::ofstream(dir_ + "/" + GetParam().handler_file) << GetParam().handler_source;
  }

  // Hangs up like a supervisor retiring the zygote, so it reaps its spares before the
  // agent object SIGKILLs.
  void TearDown() override {
    if (agent_ == nullptr) return;
    agent_->HangUp();
    EXPECT_TRUE(agent_->WaitExit(absl::Seconds(10)).ok());
  }

  // Starts the agent and checks that its first frame is Hello from itself.
  void Start(const AgentCommand& command) {
    absl::StatusOr<std::unique_ptr<AgentProcess>> agent =
        AgentProcess::Start(command, dir_ + "/agent.stderr");
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
    absl::StatusOr<wire::ReceivedFrame> frame = agent_->Next(MessageType::kHello, 0);
    ASSERT_TRUE(frame.ok()) << frame.status() << "\nstderr: " << agent_->Stderr();
    absl::StatusOr<wire::HelloMessage> hello = wire::DecodeHello(*frame);
    ASSERT_TRUE(hello.ok()) << hello.status();
    EXPECT_EQ(hello->agent_kind,
              GetParam().hello_kind.empty() ? GetParam().name : GetParam().hello_kind);
    EXPECT_EQ(hello->protocol_version, wire::kProtocolVersion);
    EXPECT_EQ(wire::kProtocolVersion, 8u);
    EXPECT_EQ(hello->pid, agent_->pid());  // Same pid namespace in this suite.
    EXPECT_EQ(frame->sender_pid, agent_->pid());
  }
  void StartFunctionMode() { Start(GetParam().function_mode(dir_)); }

  Spare SpawnSpare() {
    absl::StatusOr<Spare> spare = agent_->Spawn(NextSpareId());
    EXPECT_TRUE(spare.ok()) << spare.status() << "\nstderr: " << agent_->Stderr();
    return spare.ok() ? std::move(*spare) : Spare{};
  }

  // Runs `run` on a new spare; returns the child's answer and checks the zygote then
  // reports the spare reaped with `exit_code`.
  wire::ReceivedFrame RunOnNewSpare(const wire::RunMessage& run, int exit_code,
                                    absl::Span<const int> fds = {},
                                    std::string* compiled = nullptr) {
    Spare spare = SpawnSpare();
    absl::StatusOr<wire::ReceivedFrame> reply = RunOn(spare, run, fds, compiled);
    EXPECT_TRUE(reply.ok()) << reply.status() << "\nstderr: " << agent_->Stderr();
    ExpectReaped(spare.id, exit_code);
    return reply.ok() ? std::move(*reply) : wire::ReceivedFrame{};
  }

  void ExpectReaped(uint64_t spare_id, int exit_code) {
    absl::StatusOr<wire::DoneMessage> reaped = agent_->Reaped(spare_id);
    ASSERT_TRUE(reaped.ok()) << reaped.status();
    EXPECT_EQ(reaped->exit_kind, wire::ExitKind::kExited);
    EXPECT_EQ(reaped->exit_code, exit_code);
    EXPECT_EQ(reaped->result, "");
  }

  // The result of a Done answer ("<not Done>" otherwise).
  static std::string ResultOf(const wire::ReceivedFrame& reply) {
    absl::StatusOr<wire::DoneMessage> done = wire::DecodeDone(reply);
    if (!done.ok()) {
      absl::StatusOr<wire::FailedMessage> failed = wire::DecodeFailed(reply);
      return failed.ok() ? absl::StrCat("<Failed ", failed->error_type, ": ", failed->message, ">")
                         : absl::StrCat("<not Done: ", done.status().ToString(), ">");
    }
    EXPECT_EQ(done->exit_kind, wire::ExitKind::kExited);
    EXPECT_EQ(done->exit_code, 0);
    return done->result;
  }

  static wire::FailedMessage FailedOf(const wire::ReceivedFrame& reply) {
    absl::StatusOr<wire::FailedMessage> failed = wire::DecodeFailed(reply);
    EXPECT_TRUE(failed.ok()) << failed.status() << " / " << ResultOf(reply);
    return failed.ok() ? *failed : wire::FailedMessage{};
  }

  void IgnoresReportTouchedAndAPrefault() {
    wire::RunMessage run = MakeRun(R"({"a": [1, 2]})");
    run.report_touched = true;
    Spare spare = SpawnSpare();
    const wire::PageRun page{0x10000, 1, false};
    ASSERT_TRUE(
        wire::SendFrame(spare.channel.get(), *wire::Encode(wire::PrefaultMessage{{page}}), {})
            .ok());
    absl::StatusOr<wire::ReceivedFrame> reply = RunOn(spare, run);
    ASSERT_TRUE(reply.ok()) << reply.status() << "\nstderr: " << agent_->Stderr();
    EXPECT_EQ(ResultOf(*reply), R"({"a":[1,2]})");
    absl::StatusOr<wire::ReceivedFrame> frame =
        wire::ReceiveFrame(spare.channel.get(), absl::Seconds(10));
    EXPECT_TRUE(wire::IsPeerClosed(frame.status())) << frame.status();
    ExpectReaped(spare.id, 0);
  }

  std::string dir_;
  std::unique_ptr<AgentProcess> agent_;
  static inline int instance_ = 0;
};

TEST_P(ConformanceTest, HelloComesFirst) { StartFunctionMode(); }

TEST_P(ConformanceTest, SpawnGivesForkedFromARealChildWithOneFd) {
  StartFunctionMode();
  Spare spare = SpawnSpare();
  EXPECT_EQ(spare.forked_fds, 1u);
  ASSERT_GT(spare.pid, 0);
  EXPECT_NE(spare.pid, agent_->pid());
  EXPECT_EQ(ParentOf(spare.pid), agent_->pid());  // A child of the zygote, not a grandchild.
  EXPECT_EQ(spare.claimed_pid, spare.pid);
  // The handed-over fd is the child channel: the spare answers on it.
  ASSERT_TRUE(wire::SendFrame(spare.channel.get(), *wire::Encode(wire::PingMessage{77}), {}).ok());
  absl::StatusOr<wire::ReceivedFrame> pong = wire::ReceiveFrame(spare.channel.get(), kFrameTimeout);
  ASSERT_TRUE(pong.ok()) << pong.status();
  EXPECT_EQ(pong->frame.type, MessageType::kPong);
  EXPECT_EQ(pong->frame.request_id, 77u);
  // A spare retired unused (channel closed) exits 0 and is reported.
  spare.channel.Reset();
  ExpectReaped(spare.id, 0);
}

TEST_P(ConformanceTest, EventsRoundTripAsJson) {
  StartFunctionMode();
  // {event, result, result where numbers are doubles (empty: the same)}.
  const std::string cases[][3] = {
      {R"({"a": 1, "b": [1, 2.5, "x"], "c": {}})", R"({"a":1,"b":[1,2.5,"x"],"c":{}})", ""},
      {R"([1, "two", 3.0, null, true, false, []])", R"([1,"two",3.0,null,true,false,[]])",
       R"([1,"two",3,null,true,false,[]])"},
      {R"("ünïcødé \" \\ \n \u0001 ☃")", "\"ünïcødé \\\" \\\\ \\n \\u0001 ☃\"", ""},
      {"42", "42", ""},
      {"-7", "-7", ""},
      {"18446744073709551615", "18446744073709551615", "18446744073709552000"},
      {"123456789012345678901234567890", "123456789012345678901234567890",
       "1.2345678901234568e+29"},
      {"-1208925819614629174706176", "-1208925819614629174706176", "-1.2089258196146292e+24"},
      {"1.5", "1.5", ""},
      {"1e300", "1e+300", ""},
      {"-0.1", "-0.1", ""},
      {"true", "true", ""},
      {"false", "false", ""},
      {"null", "null", ""},
  };
  for (const auto& [event, exact, as_double] : cases) {
    const std::string& expected =
        GetParam().numbers_are_doubles && !as_double.empty() ? as_double : exact;
    EXPECT_EQ(ResultOf(RunOnNewSpare(MakeRun(event), 0)), expected) << "event " << event;
  }
}

// A child whose Run asks for it reports, after its Done, the pages it touched; one not
// asked sends nothing more; a spare given those pages as a Prefault first answers the same.
// An agent that cannot report pages (the protocol allows it) must send nothing after its
// Done instead, and a Prefault it is given must not stop its spare from serving.
TEST_P(ConformanceTest, ReportsTouchedPagesAndTakesAPrefault) {
  StartFunctionMode();
  if (!GetParam().reports_touched) {
    IgnoresReportTouchedAndAPrefault();
    return;
  }
  wire::RunMessage run = MakeRun(R"({"a": [1, 2]})");
  run.report_touched = true;
  Spare asked = SpawnSpare();
  absl::StatusOr<wire::ReceivedFrame> reply = RunOn(asked, run);
  ASSERT_TRUE(reply.ok()) << reply.status() << "\nstderr: " << agent_->Stderr();
  EXPECT_EQ(ResultOf(*reply), R"({"a":[1,2]})");
  absl::StatusOr<wire::ReceivedFrame> frame =
      wire::ReceiveFrame(asked.channel.get(), absl::Seconds(10));
  ASSERT_TRUE(frame.ok()) << frame.status() << "\nstderr: " << agent_->Stderr();
  absl::StatusOr<wire::TouchedMessage> touched = wire::DecodeTouched(*frame);
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_EQ(touched->request_id, run.request_id);
  // A Python request writes its heap.
  EXPECT_TRUE(std::any_of(touched->runs.begin(), touched->runs.end(),
                          [](const wire::PageRun& r) { return r.write; }));
  ExpectReaped(asked.id, 0);

  Spare quiet = SpawnSpare();
  wire::RunMessage plain = MakeRun(R"({"a": [1, 2]})");
  reply = RunOn(quiet, plain);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"({"a":[1,2]})");
  frame = wire::ReceiveFrame(quiet.channel.get(), absl::Seconds(10));
  EXPECT_TRUE(wire::IsPeerClosed(frame.status())) << frame.status();
  ExpectReaped(quiet.id, 0);

  Spare prefaulted = SpawnSpare();
  absl::StatusOr<wire::Frame> prefault = wire::Encode(wire::PrefaultMessage{touched->runs});
  ASSERT_TRUE(prefault.ok()) << prefault.status();
  ASSERT_TRUE(wire::SendFrame(prefaulted.channel.get(), *prefault, {}).ok());
  reply = RunOn(prefaulted, MakeRun(R"({"a": [1, 2]})"));
  ASSERT_TRUE(reply.ok()) << reply.status() << "\nstderr: " << agent_->Stderr();
  EXPECT_EQ(ResultOf(*reply), R"({"a":[1,2]})");
  ExpectReaped(prefaulted.id, 0);
}

// Join: the spare writes "0" into each file it is given (on a real v1 cgroup that moves
// it; plain files stand in here), answers Joined, then serves its Run. A file it cannot
// write is answered with Error, and the spare still serves.
TEST_P(ConformanceTest, JoinWritesZeroIntoEachFileThenTheSpareServes) {
  StartFunctionMode();
  Spare joined = SpawnSpare();
  std::vector<base::UniqueFd> files;
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    const std::string path = absl::StrCat(dir_, "/tasks-", i);
    files.emplace_back(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(files.back().valid()) << path;
    fds.push_back(files.back().get());
  }
  ASSERT_TRUE(wire::SendFrame(joined.channel.get(), *wire::Encode(wire::JoinMessage{}), fds).ok());
  absl::StatusOr<wire::ReceivedFrame> answer =
      wire::ReceiveFrame(joined.channel.get(), kFrameTimeout);
  ASSERT_TRUE(answer.ok()) << answer.status() << "\nstderr: " << agent_->Stderr();
  EXPECT_TRUE(wire::DecodeJoined(*answer).ok()) << wire::MessageTypeName(answer->frame.type);
  for (const base::UniqueFd& file : files) {
    char written[4] = {};
    EXPECT_EQ(::pread(file.get(), written, sizeof(written), 0), 1);
    EXPECT_STREQ(written, "0");
  }
  absl::StatusOr<wire::ReceivedFrame> reply = RunOn(joined, MakeRun("5"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), "5");
  ExpectReaped(joined.id, 0);

  Spare refusing = SpawnSpare();
  base::UniqueFd read_only(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int bad[] = {read_only.get()};
  ASSERT_TRUE(
      wire::SendFrame(refusing.channel.get(), *wire::Encode(wire::JoinMessage{}), bad).ok());
  answer = wire::ReceiveFrame(refusing.channel.get(), kFrameTimeout);
  ASSERT_TRUE(answer.ok()) << answer.status();
  absl::StatusOr<wire::ErrorMessage> error = wire::DecodeError(*answer);
  ASSERT_TRUE(error.ok()) << wire::MessageTypeName(answer->frame.type);
  EXPECT_NE(error->message.find("cannot join file 1 of 1"), std::string::npos) << error->message;
  reply = RunOn(refusing, MakeRun("6"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), "6");
  ExpectReaped(refusing.id, 0);
}

TEST_P(ConformanceTest, PrintGoesToTheRequestStdio) {
  StartFunctionMode();
  int out[2], err[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  UniqueFd out_read(out[0]), out_write(out[1]), err_read(err[0]), err_write(err[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fds[3] = {null.get(), out_write.get(), err_write.get()};
  Spare spare = SpawnSpare();
  absl::StatusOr<wire::ReceivedFrame> reply =
      RunOn(spare, MakeRun(R"({"op": "print"})", FdLayout::kStdio), fds);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"("printed")");
  out_write.Reset();
  err_write.Reset();
  ExpectReaped(spare.id, 0);
  // Done comes after the flush: everything printed is already in the pipes.
  EXPECT_EQ(ReadAll(out_read.get()), "hello from the handler\n");
  EXPECT_EQ(ReadAll(err_read.get()), "to stderr\n");
}

// v6: an event larger than a frame comes in a sealed memfd after the stdio fds. It reaches
// the handler whole, and the handler does not hold the memfd; an unsealed one is refused.
TEST_P(ConformanceTest, AnEventLargerThanAFrameArrivesInASealedMemfd) {
  StartFunctionMode();
  std::string blob(1 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) {
    blob[i] = static_cast<char>('a' + (i * 7 + i / 977) % 26);
  }
  const std::string event = absl::StrCat(R"({"op": "measure", "blob": ")", blob, R"("})");
  ASSERT_GT(event.size(), wire::kMaxPayloadSize);
  wire::RunMessage run = MakeRun("", FdLayout::kStdio);
  run.event_fd_size = event.size();
  UniqueFd stdio[3];
  for (UniqueFd& fd : stdio) fd.Reset(::memfd_create("stdio", MFD_CLOEXEC));
  absl::StatusOr<UniqueFd> sealed = wire::MakeEventMemfd(event);
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  const int fds[4] = {stdio[0].get(), stdio[1].get(), stdio[2].get(), sealed->get()};
  EXPECT_EQ(ResultOf(RunOnNewSpare(run, 0, fds)),
            absl::StrCat(R"({"length":)", blob.size(), R"(,"crc32":)", Crc32(blob),
                         R"(,"event_fd_open":false})"));

  // The same bytes in a memfd nobody sealed: it could change while the agent reads it.
  UniqueFd open(::memfd_create("zygo-event", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::write(open.get(), event.data(), event.size()), static_cast<ssize_t>(event.size()));
  const int unsealed_fds[4] = {stdio[0].get(), stdio[1].get(), stdio[2].get(), open.get()};
  const wire::FailedMessage failed = FailedOf(RunOnNewSpare(run, 1, unsealed_fds));
  EXPECT_EQ(failed.error_type, "EventError");
  EXPECT_NE(failed.message.find("seals"), std::string::npos) << failed.message;
}

TEST_P(ConformanceTest, ExceptionIsFailedWithTraceback) {
  StartFunctionMode();
  const wire::FailedMessage failed = FailedOf(RunOnNewSpare(MakeRun(R"({"op": "raise"})"), 1));
  EXPECT_EQ(failed.error_type, "ZeroDivisionError");
  EXPECT_EQ(failed.message, "division by zero");
  const int line = LineOf(GetParam().handler_source, "RAISE_LINE");
  ASSERT_GT(line, 0);
  EXPECT_NE(failed.traceback.find(GetParam().frame_at(GetParam().handler_file, line)),
            std::string::npos)
      << failed.traceback;
  EXPECT_NE(failed.traceback.find("ZeroDivisionError"), std::string::npos) << failed.traceback;
}

TEST_P(ConformanceTest, BadEventIsEventError) {
  StartFunctionMode();
  const wire::FailedMessage failed = FailedOf(RunOnNewSpare(MakeRun("{not json"), 1));
  EXPECT_EQ(failed.error_type, "EventError");
  EXPECT_FALSE(failed.message.empty());
}

TEST_P(ConformanceTest, UnencodableResultIsResultError) {
  StartFunctionMode();
  const wire::FailedMessage failed = FailedOf(RunOnNewSpare(MakeRun(R"({"op": "set"})"), 1));
  EXPECT_EQ(failed.error_type, "ResultError");
  EXPECT_NE(failed.message.find(GetParam().unencodable), std::string::npos) << failed.message;
}

TEST_P(ConformanceTest, ExitWithoutReplyIsReportedByTheZygote) {
  StartFunctionMode();
  Spare spare = SpawnSpare();
  absl::StatusOr<wire::ReceivedFrame> reply = RunOn(spare, MakeRun(R"({"op": "exit", "code": 3})"));
  EXPECT_TRUE(wire::IsPeerClosed(reply.status())) << reply.status();
  ExpectReaped(spare.id, 3);
}

TEST_P(ConformanceTest, AKilledSpareIsReportedSignalled) {
  StartFunctionMode();
  Spare spare = SpawnSpare();
  ASSERT_EQ(::kill(spare.pid, SIGKILL), 0);  // As the supervisor does past a deadline.
  absl::StatusOr<wire::DoneMessage> reaped = agent_->Reaped(spare.id);
  ASSERT_TRUE(reaped.ok()) << reaped.status();
  EXPECT_EQ(reaped->exit_kind, wire::ExitKind::kSignalled);
  EXPECT_EQ(reaped->exit_code, SIGKILL);
}

TEST_P(ConformanceTest, TheZygoteSurvivesBadFrames) {
  StartFunctionMode();
  Spare spare = SpawnSpare();
  // The same spare id again while that spare lives: an Error for that id, no second fork.
  ASSERT_TRUE(agent_->Send(*wire::Encode(wire::SpawnMessage{spare.id})).ok());
  absl::StatusOr<wire::ReceivedFrame> error = agent_->Next(MessageType::kError, spare.id);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(wire::DecodeError(*error)->code, absl::StatusCode::kAlreadyExists);
  // A Run belongs on a child channel: the zygote answers Error on the connection.
  ASSERT_TRUE(agent_->Send(*wire::Encode(MakeRun("1"))).ok());
  error = agent_->Next(MessageType::kError, 0);
  ASSERT_TRUE(error.ok()) << error.status();
  // And it still serves: Ping, then a request on the first spare.
  ASSERT_TRUE(agent_->Send(*wire::Encode(wire::PingMessage{99})).ok());
  EXPECT_TRUE(agent_->Next(MessageType::kPong, 99).ok());
  absl::StatusOr<wire::ReceivedFrame> reply = RunOn(spare, MakeRun("[2]"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), "[2]");
  ExpectReaped(spare.id, 0);
}

TEST_P(ConformanceTest, SparesAreReseeded) {
  StartFunctionMode();
  Spare first = SpawnSpare();
  Spare second = SpawnSpare();
  absl::StatusOr<wire::ReceivedFrame> a = RunOn(first, MakeRun(R"({"op": "random"})"));
  absl::StatusOr<wire::ReceivedFrame> b = RunOn(second, MakeRun(R"({"op": "random"})"));
  ASSERT_TRUE(a.ok() && b.ok());
  const nlohmann::json ra = nlohmann::json::parse(ResultOf(*a), nullptr, false);
  const nlohmann::json rb = nlohmann::json::parse(ResultOf(*b), nullptr, false);
  ASSERT_TRUE(ra.is_object() && rb.is_object()) << ra << rb;
  EXPECT_NE(ra["random"], rb["random"]);
  EXPECT_NE(ra["uuid"], rb["uuid"]);
  ExpectReaped(first.id, 0);
  ExpectReaped(second.id, 0);
}

// Each spare's /tmp is its own tmpfs: the first writes a file there, which neither the
// second (alive at the same time) nor the host's /tmp has.
TEST_P(ConformanceTest, EachSpareHasItsOwnEmptyTmp) {
  StartFunctionMode();
  Spare first = SpawnSpare();
  Spare second = SpawnSpare();
  const std::string mine = absl::StrCat("/tmp/zygo-conformance-", first.id);
  absl::StatusOr<wire::ReceivedFrame> reply =
      RunOn(first, MakeRun(nlohmann::json({{"op", "write"}, {"path", mine}}).dump()));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"("written")");
  ExpectReaped(first.id, 0);
  reply = RunOn(second, MakeRun(R"({"op": "tmpdir"})"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  const nlohmann::json got = nlohmann::json::parse(ResultOf(*reply), nullptr, false);
  ASSERT_TRUE(got.is_object()) << ResultOf(*reply);
  EXPECT_EQ(got["gettempdir"], "/tmp");
  EXPECT_EQ(got["environ"], "/tmp");
  EXPECT_EQ(got["c_environ"], "/tmp");
  EXPECT_EQ(got["listing"], nlohmann::json::array());
  ExpectReaped(second.id, 0);
  struct stat st;
  EXPECT_NE(::stat(mine.c_str(), &st), 0) << mine << " reached the host's /tmp";
}

TEST_P(ConformanceTest, WritesOnlyBeneathTheTmpDir) {
  if (LandlockAbi() < 1) GTEST_SKIP() << "the kernel has no Landlock";
  StartFunctionMode();
  // Allow control: the same probe writes into the spare's own /tmp.
  Spare spare = SpawnSpare();
  const std::string inside = "/tmp/probe";
  absl::StatusOr<wire::ReceivedFrame> reply =
      RunOn(spare, MakeRun(nlohmann::json({{"op", "write"}, {"path", inside}}).dump()));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"("written")");
  ExpectReaped(spare.id, 0);
  // The handler's own directory is writable for this test process, not for a request.
  const std::string outside = dir_ + "/intruder";
  const wire::FailedMessage failed = FailedOf(
      RunOnNewSpare(MakeRun(nlohmann::json({{"op", "write"}, {"path", outside}}).dump()), 1));
  EXPECT_EQ(failed.error_type, "PermissionError") << failed.message;
  struct stat st;
  EXPECT_NE(::stat(outside.c_str(), &st), 0);
}

// A spare that never got Isolate (so no Landlock domain of its own yet) answers its Run
// Failed("SetupError"), exits 1 and never runs the handler, which would have written into
// the test's directory. The control: an isolated spare runs the same kind of write into
// its own /tmp.
TEST_P(ConformanceTest, AnUnisolatedSpareNeverRunsItsRequest) {
  StartFunctionMode();
  const auto write_event = [](const std::string& path) {
    return nlohmann::json({{"op", "write"}, {"path", path}}).dump();
  };
  Spare isolated = SpawnSpare();
  absl::StatusOr<wire::ReceivedFrame> reply = RunOn(isolated, MakeRun(write_event("/tmp/ran")));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"("written")");
  ExpectReaped(isolated.id, 0);

  const uint64_t id = NextSpareId();
  absl::StatusOr<Spare> unisolated = agent_->Spawn(id, /*isolate=*/false);
  ASSERT_TRUE(unisolated.ok()) << unisolated.status();
  const std::string outside = dir_ + "/ran";
  reply = RunOn(*unisolated, MakeRun(write_event(outside)));
  ASSERT_TRUE(reply.ok()) << reply.status();
  const wire::FailedMessage failed = FailedOf(*reply);
  EXPECT_EQ(failed.error_type, "SetupError");
  EXPECT_NE(failed.message.find("before Isolate"), std::string::npos) << failed.message;
  struct stat st;
  EXPECT_NE(::stat(outside.c_str(), &st), 0) << "the handler ran";
  ExpectReaped(id, 1);
}

TEST_P(ConformanceTest, ARequestCannotSignalASiblingOrTheZygote) {
  if (LandlockAbi() < 6) {
    GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << " < 6 has no signal scoping";
  }
  StartFunctionMode();
  Spare attacker = SpawnSpare();
  Spare victim = SpawnSpare();
  const auto kill_event = [](pid_t pid, int signal) {
    return nlohmann::json({{"op", "kill"}, {"pid", pid}, {"signal", signal}}).dump();
  };
  absl::StatusOr<wire::ReceivedFrame> reply =
      RunOn(attacker, MakeRun(kill_event(victim.pid, SIGKILL)));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(FailedOf(*reply).error_type, "PermissionError");
  ExpectReaped(attacker.id, 1);
  // The victim is alive and serves its request.
  EXPECT_EQ(ResultOf(*RunOn(victim, MakeRun("1"))), "1");
  ExpectReaped(victim.id, 0);
  // Nor the zygote (signal 0 only probes; it would be harmless if it got through).
  EXPECT_EQ(FailedOf(RunOnNewSpare(MakeRun(kill_event(agent_->pid(), 0)), 1)).error_type,
            "PermissionError");
  // Allow control: the same probe against the request itself goes through.
  Spare self = SpawnSpare();
  reply = RunOn(self, MakeRun(kill_event(self.pid, 0)));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ResultOf(*reply), R"("sent")");
  ExpectReaped(self.id, 0);
}

TEST_P(ConformanceTest, PoolRunsTheCodeItIsGiven) {
  Start(GetParam().pool_mode(dir_));
  wire::RunMessage run = MakeRun(R"({"x": 21})");
  run.entry = "sha256-0123abcd";
  run.code = GetParam().pool_script;
  std::string compiled;
  EXPECT_EQ(ResultOf(RunOnNewSpare(run, 0, {}, &compiled)), R"({"doubled":42})");
  // An agent may send the script's bytecode first (the python agent does); given back to
  // another spare instead of the source, it runs the same.
  EXPECT_EQ(!compiled.empty(), GetParam().compiles_scripts);
  if (!compiled.empty()) {
    wire::RunMessage from_bytecode = run;
    from_bytecode.code.clear();
    from_bytecode.bytecode = compiled;
    std::string again;
    EXPECT_EQ(ResultOf(RunOnNewSpare(from_bytecode, 0, {}, &again)), R"({"doubled":42})");
    EXPECT_EQ(again, "") << "no Compiled for a Run that carried bytecode";
  }

  run.code = GetParam().pool_script_raising;
  const wire::FailedMessage failed = FailedOf(RunOnNewSpare(run, 1));
  EXPECT_EQ(failed.error_type, "KeyError");
  const int line = LineOf(GetParam().pool_script_raising, "RAISE_LINE");
  EXPECT_NE(failed.traceback.find(GetParam().frame_at(
                absl::StrCat("sha256-0123abcd", GetParam().script_extension), line)),
            std::string::npos)
      << failed.traceback;

  run.code.clear();
  EXPECT_EQ(FailedOf(RunOnNewSpare(run, 1)).error_type, "EntryError");
}

TEST_P(ConformanceTest, EofOnTheZygoteChannelEndsTheAgentAndItsSpares) {
  StartFunctionMode();
  Spare spare = SpawnSpare();
  ASSERT_GT(spare.pid, 0);
  agent_->HangUp();
  absl::StatusOr<int> wstatus = agent_->WaitExit(absl::Seconds(10));
  ASSERT_TRUE(wstatus.ok()) << wstatus.status();
  EXPECT_TRUE(WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == 0) << *wstatus;
  EXPECT_NE(::kill(spare.pid, 0), 0);  // Reaped by the zygote on its way out.
  EXPECT_TRUE(wire::IsPeerClosed(wire::ReceiveFrame(spare.channel.get(), kFrameTimeout).status()));
}

// ~200 requests on prepared spares: the p50 from Run sent to Done received is what the
// warm path adds on top of the handler itself. A Pong means the spare is isolated and
// waiting; 40 ms more lets it go idle and finish its prefault. Then 100 requests the way a burst
// meets them: Run right after Forked, so the spare isolates itself first and skips the rest
// of its prefault.
TEST_P(ConformanceTest, RequestLatency) {
  AgentCommand command = GetParam().function_mode(dir_);
  command.set_env.push_back({"ZYGO_AGENT_VERBOSE", "1"});
  Start(command);
  const auto p50 = [](std::vector<double> samples) {
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
  };
  // Runs request i on `spare`; returns microseconds from Run sent to Done received.
  const auto run_one = [this](Spare& spare, int i) {
    const std::string event = absl::StrCat(R"({"i": )", i, R"(, "name": "request"})");
    const absl::Time sent = absl::Now();
    absl::StatusOr<wire::ReceivedFrame> reply = RunOn(spare, MakeRun(event));
    const double elapsed_us = absl::ToDoubleMicroseconds(absl::Now() - sent);
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (reply.ok()) {
      EXPECT_EQ(ResultOf(*reply), absl::StrCat(R"({"i":)", i, R"(,"name":"request"})"));
    }
    ExpectReaped(spare.id, 0);
    return elapsed_us;
  };
  std::vector<double> run_us, ready_us, burst_us;
  for (int i = 0; i < GetParam().latency_requests; ++i) {
    const absl::Time spawned = absl::Now();
    Spare spare = SpawnSpare();
    ASSERT_TRUE(wire::SendFrame(spare.channel.get(), *wire::Encode(wire::PingMessage{1}), {}).ok());
    ASSERT_TRUE(wire::ReceiveFrame(spare.channel.get(), kFrameTimeout).ok());
    ready_us.push_back(absl::ToDoubleMicroseconds(absl::Now() - spawned));
    absl::SleepFor(GetParam().settle);  // python: 20 ms idle before the prefault, ~5 ms for it
    run_us.push_back(run_one(spare, i));
  }
  for (int i = 0; i < GetParam().latency_requests / 2; ++i) {
    const absl::Time spawned = absl::Now();
    Spare spare = SpawnSpare();
    const double forked_us = absl::ToDoubleMicroseconds(absl::Now() - spawned);
    burst_us.push_back(forked_us + run_one(spare, i));
  }
  std::printf(
      "%s: Run -> Done p50 %.0f us on a prefaulted spare; Spawn -> Pong p50 %.0f us; "
      "Spawn -> Done p50 %.0f us with Run right after Forked\n",
      GetParam().name.c_str(), p50(run_us), p50(ready_us), p50(burst_us));
  // The agent's own per-spare prefault reports, when it gives them.
  std::vector<double> done_us, done_pages;
  int interrupted = 0;
  std::istringstream log(agent_->Stderr());
  for (std::string line; std::getline(log, line);) {
    size_t pages = 0, present = 0, mappings = 0;
    long long us = 0;
    const size_t at = line.find("prefault done: ");
    if (line.find("prefault interrupted: ") != std::string::npos) ++interrupted;
    if (at != std::string::npos &&
        std::sscanf(line.c_str() + at,
                    "prefault done: touched %zu of %zu present pages in %zu "
                    "mappings in %lld us",
                    &pages, &present, &mappings, &us) == 4) {
      done_us.push_back(static_cast<double>(us));
      done_pages.push_back(static_cast<double>(pages));
    }
  }
  if (!done_us.empty()) {
    std::printf("prefault: %zu spares done (p50 %.0f pages in %.0f us), %d interrupted by a Run\n",
                done_us.size(), p50(done_pages), p50(done_us), interrupted);
  }
  RecordProperty("run_to_done_p50_us", static_cast<int>(p50(run_us)));
  EXPECT_LT(p50(run_us), 20000)
      << "a prepared spare should answer a trivial request in well under 20 ms";
}

// Start-up failures of the Python agent: exit 125 before Hello, with one clear line.
class PythonStartupTest : public ::testing::Test {
 protected:
  // Runs the Python agent (function mode on a handler with `source`) with `command`
  // adjusted by `adjust`; returns its wait status and stderr.
  std::pair<int, std::string> RunToExit(const std::string& source,
                                        void (*adjust)(AgentCommand&) = nullptr) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir =
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/startup-", ::getpid(), "-", ++instance_);
    EXPECT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::ofstream(dir + "/handler.py") << source;
    AgentKind python;
    for (const AgentKind& kind : AllAgentKinds()) {
      if (kind.name == "python") python = kind;
    }
    AgentCommand command = python.function_mode(dir);
    if (adjust != nullptr) adjust(command);
    absl::StatusOr<std::unique_ptr<AgentProcess>> agent =
        AgentProcess::Start(command, dir + "/agent.stderr");
    EXPECT_TRUE(agent.ok()) << agent.status();
    if (!agent.ok()) return {-1, ""};
    // No Hello may come: the channel closes when the agent exits.
    absl::StatusOr<wire::ReceivedFrame> hello = (*agent)->Next(MessageType::kHello, 0);
    EXPECT_FALSE(hello.ok());
    absl::StatusOr<int> wstatus = (*agent)->WaitExit(absl::Seconds(20));
    EXPECT_TRUE(wstatus.ok()) << wstatus.status();
    return {wstatus.value_or(-1), (*agent)->Stderr()};
  }

  static inline int instance_ = 0;
};

TEST_F(PythonStartupTest, NoLibpythonIsExit125WithAClearMessage) {
  const auto [wstatus, stderr_text] =
      RunToExit("def handle(event):\n    return event\n", [](AgentCommand& command) {
        command.set_env.push_back({"ZYGO_LIBPYTHON", "/nonexistent"});
      });
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_EQ(stderr_text,
            "zygo-agent-python: cannot load Python: ZYGO_LIBPYTHON=/nonexistent is not a "
            "readable file\n");
}

TEST_F(PythonStartupTest, ImportErrorIsExit125WithTraceback) {
  const auto [wstatus, stderr_text] = RunToExit("import no_such_module_zygo\n");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_EQ(stderr_text.rfind("zygo-agent-python: cannot import ", 0), 0u) << stderr_text;
  EXPECT_NE(stderr_text.find("ModuleNotFoundError: No module named 'no_such_module_zygo'"),
            std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find("handler.py\", line 1"), std::string::npos) << stderr_text;
}

TEST_F(PythonStartupTest, MissingFunctionIsExit125) {
  const auto [wstatus, stderr_text] = RunToExit("def other(event):\n    return 1\n");
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 125);
  EXPECT_NE(stderr_text.find("has no function 'handle'"), std::string::npos) << stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Agents, ConformanceTest, ::testing::ValuesIn(AllAgentKinds()),
                         [](const ::testing::TestParamInfo<AgentKind>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace zygo::agents::conformance
