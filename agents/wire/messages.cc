// Payload schemas, validation, and encode/decode for each warm-path message.
#include "agents/wire/messages.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/fields.h"
#include "core/base/status_macros.h"

namespace zygo::wire {
namespace {

// Field tags, per message. Tags are never reused for a different meaning.
enum : uint16_t { kHelloAgentKind = 1, kHelloProtocolVersion = 2, kHelloPid = 3 };
enum : uint16_t {
  kRunEntry = 1,
  kRunEvent = 2,
  kRunDeadlineMs = 3,
  kRunFdLayout = 4,
  kRunCode = 5,
  kRunBytecode = 6,
  kRunReportTouched = 7,
  kRunEventFdSize = 8,  // v6
};
enum : uint16_t { kForkedPid = 1 };
enum : uint16_t { kDoneExitKind = 1, kDoneExitCode = 2, kDoneResult = 3 };
enum : uint16_t { kErrorCode = 1, kErrorMessage = 2 };
enum : uint16_t { kFailedErrorType = 1, kFailedMessage = 2, kFailedTraceback = 3 };
enum : uint16_t { kCompiledBytecode = 1 };
enum : uint16_t { kPageRuns = 1 };  // Touched and Prefault

// A PageRun on the wire: start (u64), pages (u32), flags (u32: bit 0 write), little-endian.
constexpr size_t kPageRunBytes = 16;

constexpr FieldSpec kHelloSchema[] = {
    {kHelloAgentKind, FieldKind::kBytes, kMaxAgentKindSize, true},
    {kHelloProtocolVersion, FieldKind::kU64, 8, true},
    {kHelloPid, FieldKind::kU64, 8, true},
};
constexpr FieldSpec kRunSchema[] = {
    {kRunEntry, FieldKind::kBytes, kMaxEntrySize, true},
    {kRunEvent, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunDeadlineMs, FieldKind::kU64, 8, true},
    {kRunFdLayout, FieldKind::kU64, 8, true},
    {kRunCode, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunBytecode, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunReportTouched, FieldKind::kU64, 8, false},
    {kRunEventFdSize, FieldKind::kU64, 8, false},
};
constexpr FieldSpec kCompiledSchema[] = {
    {kCompiledBytecode, FieldKind::kBytes, kMaxPayloadSize, true},
};
constexpr FieldSpec kTouchedSchema[] = {
    {kPageRuns, FieldKind::kBytes, kMaxPageRuns* kPageRunBytes, false},
};
constexpr FieldSpec kPrefaultSchema[] = {
    {kPageRuns, FieldKind::kBytes, kMaxPageRuns* kPageRunBytes, true},
};
constexpr FieldSpec kForkedSchema[] = {{kForkedPid, FieldKind::kU64, 8, true}};
constexpr FieldSpec kDoneSchema[] = {
    {kDoneExitKind, FieldKind::kU64, 8, true},
    {kDoneExitCode, FieldKind::kU64, 8, true},
    {kDoneResult, FieldKind::kBytes, kMaxPayloadSize, false},
};
constexpr FieldSpec kErrorSchema[] = {
    {kErrorCode, FieldKind::kU64, 8, true},
    {kErrorMessage, FieldKind::kBytes, kMaxErrorMessageSize, false},
};
constexpr FieldSpec kFailedSchema[] = {
    {kFailedErrorType, FieldKind::kBytes, kMaxErrorTypeSize, true},
    {kFailedMessage, FieldKind::kBytes, kMaxFailedMessageSize, false},
    {kFailedTraceback, FieldKind::kBytes, kMaxTracebackSize, false},
};

absl::Status Invalid(MessageType type, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(MessageTypeName(type), ": ", what));
}

// The frame-level checks every decoder starts with.
absl::Status CheckFrame(const ReceivedFrame& received, MessageType want, size_t want_fds) {
  if (received.frame.type != want) {
    return absl::InvalidArgumentError(absl::StrCat("expected a ", MessageTypeName(want),
                                                   " frame, got ",
                                                   MessageTypeName(received.frame.type)));
  }
  if (received.fds.size() != want_fds) {
    return Invalid(want, absl::StrCat("carries ", received.fds.size(), " fds, want ", want_fds));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestId(MessageType type, uint64_t request_id) {
  if (request_id == 0) return Invalid(type, "request id 0 is reserved for the connection");
  return absl::OkStatus();
}

absl::Status CheckPid(MessageType type, uint64_t pid) {
  if (pid == 0 || pid > static_cast<uint64_t>(kMaxPid)) {
    return Invalid(type, absl::StrCat("pid ", pid, " is out of range"));
  }
  return absl::OkStatus();
}

absl::Status ValidateHello(const HelloMessage& m) {
  if (m.agent_kind.empty() || m.agent_kind.size() > kMaxAgentKindSize) {
    return Invalid(MessageType::kHello, "agent kind must be 1..32 bytes");
  }
  for (char c : m.agent_kind) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
      return Invalid(MessageType::kHello, "agent kind may hold only [a-z0-9_-]");
    }
  }
  if (m.protocol_version == 0 || m.protocol_version > 0xFFFF) {
    return Invalid(MessageType::kHello, absl::StrCat("bad protocol version ", m.protocol_version));
  }
  if (m.pid < 0) return Invalid(MessageType::kHello, "negative pid");
  return CheckPid(MessageType::kHello, static_cast<uint64_t>(m.pid));
}

absl::Status ValidateRun(const RunMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kRun, m.request_id));
  if (m.entry.empty() || m.entry.size() > kMaxEntrySize) {
    return Invalid(MessageType::kRun, "entry must be 1..4096 bytes");
  }
  if (m.deadline_ms == 0 || m.deadline_ms > kMaxDeadlineMs) {
    return Invalid(MessageType::kRun, absl::StrCat("deadline ", m.deadline_ms, " ms out of range"));
  }
  if (!m.code.empty() && !m.bytecode.empty()) {
    return Invalid(MessageType::kRun, "code and bytecode are exclusive");
  }
  if (m.event_fd_size > kMaxEventBytes) {
    return Invalid(MessageType::kRun, absl::StrCat("an event of ", m.event_fd_size,
                                                   " bytes; at most ", kMaxEventBytes));
  }
  if (m.event_fd_size != 0 && !m.event.empty()) {
    return Invalid(MessageType::kRun, "an event inline and in a memfd are exclusive");
  }
  switch (m.fd_layout) {
    case FdLayout::kNone:
    case FdLayout::kStdio:
    case FdLayout::kResultPipe:
      return absl::OkStatus();
  }
  return Invalid(MessageType::kRun, "unknown fd layout");
}

absl::Status ValidatePageRuns(MessageType type, const std::vector<PageRun>& runs) {
  if (runs.size() > kMaxPageRuns) {
    return Invalid(type, absl::StrCat(runs.size(), " page runs; at most ", kMaxPageRuns));
  }
  uint64_t pages = 0;
  for (const PageRun& run : runs) {
    if (run.start % kPageBytes != 0 || run.pages == 0 ||
        run.start > UINT64_MAX - uint64_t{run.pages} * kPageBytes) {
      return Invalid(type, absl::StrCat("bad page run at ", run.start, " of ", run.pages));
    }
    pages += run.pages;
  }
  if (pages > kMaxPageRunPages) {
    return Invalid(type, absl::StrCat(pages, " pages; at most ", kMaxPageRunPages));
  }
  return absl::OkStatus();
}

std::string PackPageRuns(const std::vector<PageRun>& runs) {
  std::string out;
  out.reserve(runs.size() * kPageRunBytes);
  auto put = [&out](uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  };
  for (const PageRun& run : runs) {
    put(run.start, 8);
    put(run.pages, 4);
    put(run.write ? 1 : 0, 4);
  }
  return out;
}

absl::StatusOr<std::vector<PageRun>> UnpackPageRuns(MessageType type, absl::string_view bytes) {
  if (bytes.size() % kPageRunBytes != 0) {
    return Invalid(type, absl::StrCat("page runs of ", bytes.size(), " bytes"));
  }
  auto get = [&bytes](size_t at, int count) {
    uint64_t value = 0;
    for (int i = 0; i < count; ++i)
      value |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
    return value;
  };
  std::vector<PageRun> runs;
  for (size_t at = 0; at < bytes.size(); at += kPageRunBytes) {
    const uint64_t flags = get(at + 12, 4);
    if (flags > 1) return Invalid(type, absl::StrCat("page run flags ", flags));
    runs.push_back({get(at, 8), static_cast<uint32_t>(get(at + 8, 4)), flags == 1});
  }
  ZYGO_RETURN_IF_ERROR(ValidatePageRuns(type, runs));
  return runs;
}

absl::Status ValidateForked(const ForkedMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kForked, m.request_id));
  if (m.pid < 0) return Invalid(MessageType::kForked, "negative pid");
  return CheckPid(MessageType::kForked, static_cast<uint64_t>(m.pid));
}

absl::Status ValidateDone(const DoneMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kDone, m.request_id));
  switch (m.exit_kind) {
    case ExitKind::kExited:
      if (m.exit_code < 0 || m.exit_code > 255) {
        return Invalid(MessageType::kDone, absl::StrCat("exit code ", m.exit_code, " not 0..255"));
      }
      return absl::OkStatus();
    case ExitKind::kSignalled:
      if (m.exit_code < 1 || m.exit_code > 64) {
        return Invalid(MessageType::kDone, absl::StrCat("signal ", m.exit_code, " not 1..64"));
      }
      return absl::OkStatus();
  }
  return Invalid(MessageType::kDone, "unknown exit kind");
}

absl::Status ValidateFailed(const FailedMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kFailed, m.request_id));
  if (m.error_type.empty() || m.error_type.size() > kMaxErrorTypeSize) {
    return Invalid(MessageType::kFailed, "error type must be 1..256 bytes");
  }
  if (m.message.size() > kMaxFailedMessageSize) {
    return Invalid(MessageType::kFailed, "message over 4096 bytes");
  }
  if (m.traceback.size() > kMaxTracebackSize) {
    return Invalid(MessageType::kFailed, "traceback over 64 KiB");
  }
  return absl::OkStatus();
}

absl::Status ValidateError(const ErrorMessage& m) {
  const int code = static_cast<int>(m.code);
  // absl::StatusCode's defined values are 1..16 besides kOk.
  if (code < 1 || code > 16) return Invalid(MessageType::kError, absl::StrCat("bad code ", code));
  if (m.message.size() > kMaxErrorMessageSize) {
    return Invalid(MessageType::kError, "message too long");
  }
  return absl::OkStatus();
}

Frame MakeFrame(MessageType type, uint64_t request_id, std::string payload) {
  Frame frame;
  frame.type = type;
  frame.request_id = request_id;
  frame.payload = std::move(payload);
  return frame;
}

absl::StatusOr<Frame> CheckedFrame(Frame frame) {
  if (frame.payload.size() > kMaxPayloadSize) {
    return Invalid(frame.type, absl::StrCat("payload of ", frame.payload.size(), " bytes exceeds ",
                                            kMaxPayloadSize));
  }
  return frame;
}

}  // namespace

size_t FdCount(FdLayout layout) {
  switch (layout) {
    case FdLayout::kNone:
      return 0;
    case FdLayout::kStdio:
      return 3;
    case FdLayout::kResultPipe:
      return 1;
  }
  return 0;
}

size_t RunFdCount(const RunMessage& run) {
  return FdCount(run.fd_layout) + (run.event_fd_size != 0 ? 1 : 0);
}

absl::StatusOr<Frame> Encode(const HelloMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateHello(m));
  return CheckedFrame(MakeFrame(MessageType::kHello, 0,
                                FieldWriter()
                                    .AddBytes(kHelloAgentKind, m.agent_kind)
                                    .AddU64(kHelloProtocolVersion, m.protocol_version)
                                    .AddU64(kHelloPid, static_cast<uint64_t>(m.pid))
                                    .Finish()));
}

absl::StatusOr<Frame> Encode(const RunMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateRun(m));
  FieldWriter writer;
  writer.AddBytes(kRunEntry, m.entry);
  if (!m.event.empty()) writer.AddBytes(kRunEvent, m.event);
  writer.AddU64(kRunDeadlineMs, m.deadline_ms);
  writer.AddU64(kRunFdLayout, static_cast<uint64_t>(m.fd_layout));
  if (!m.code.empty()) writer.AddBytes(kRunCode, m.code);
  if (!m.bytecode.empty()) writer.AddBytes(kRunBytecode, m.bytecode);
  if (m.report_touched) writer.AddU64(kRunReportTouched, 1);
  if (m.event_fd_size != 0) writer.AddU64(kRunEventFdSize, m.event_fd_size);
  return CheckedFrame(MakeFrame(MessageType::kRun, m.request_id, writer.Finish()));
}

absl::StatusOr<Frame> Encode(const ForkedMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateForked(m));
  return MakeFrame(MessageType::kForked, m.request_id,
                   FieldWriter().AddU64(kForkedPid, static_cast<uint64_t>(m.pid)).Finish());
}

absl::StatusOr<Frame> Encode(const SpawnMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kSpawn, m.spare_id));
  return MakeFrame(MessageType::kSpawn, m.spare_id, "");
}

absl::StatusOr<Frame> Encode(const DoneMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateDone(m));
  FieldWriter writer;
  writer.AddU64(kDoneExitKind, static_cast<uint64_t>(m.exit_kind));
  writer.AddU64(kDoneExitCode, static_cast<uint64_t>(m.exit_code));
  if (!m.result.empty()) writer.AddBytes(kDoneResult, m.result);
  return CheckedFrame(MakeFrame(MessageType::kDone, m.request_id, writer.Finish()));
}

std::string Head(absl::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

ErrorMessage ErrorFromStatus(uint64_t request_id, const absl::Status& status) {
  return ErrorMessage{request_id, status.code(), Head(status.message(), kMaxErrorMessageSize)};
}

absl::StatusOr<Frame> Encode(const ErrorMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateError(m));
  FieldWriter writer;
  writer.AddU64(kErrorCode, static_cast<uint64_t>(m.code));
  if (!m.message.empty()) writer.AddBytes(kErrorMessage, m.message);
  return MakeFrame(MessageType::kError, m.request_id, writer.Finish());
}

absl::StatusOr<Frame> Encode(const FailedMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateFailed(m));
  FieldWriter writer;
  writer.AddBytes(kFailedErrorType, m.error_type);
  if (!m.message.empty()) writer.AddBytes(kFailedMessage, m.message);
  if (!m.traceback.empty()) writer.AddBytes(kFailedTraceback, m.traceback);
  return CheckedFrame(MakeFrame(MessageType::kFailed, m.request_id, writer.Finish()));
}

absl::StatusOr<Frame> Encode(const CompiledMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kCompiled, m.request_id));
  if (m.bytecode.empty()) return Invalid(MessageType::kCompiled, "no bytecode");
  return CheckedFrame(MakeFrame(MessageType::kCompiled, m.request_id,
                                FieldWriter().AddBytes(kCompiledBytecode, m.bytecode).Finish()));
}

absl::StatusOr<Frame> Encode(const PingMessage& m) {
  return MakeFrame(MessageType::kPing, m.nonce, "");
}

absl::StatusOr<Frame> Encode(const PongMessage& m) {
  return MakeFrame(MessageType::kPong, m.nonce, "");
}

absl::StatusOr<Frame> Encode(const JoinMessage&) { return MakeFrame(MessageType::kJoin, 0, ""); }

absl::StatusOr<Frame> Encode(const JoinedMessage&) {
  return MakeFrame(MessageType::kJoined, 0, "");
}

absl::StatusOr<HelloMessage> DecodeHello(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kHello, 0));
  if (received.frame.request_id != 0) return Invalid(MessageType::kHello, "request id must be 0");
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kHelloSchema));
  HelloMessage m;
  m.agent_kind = std::string(*reader.Bytes(kHelloAgentKind));
  const uint64_t version = *reader.U64(kHelloProtocolVersion);
  const uint64_t pid = *reader.U64(kHelloPid);
  // Range-check before narrowing, so a huge value cannot wrap into a valid one.
  if (version > 0xFFFF) return Invalid(MessageType::kHello, "protocol version out of range");
  ZYGO_RETURN_IF_ERROR(CheckPid(MessageType::kHello, pid));
  m.protocol_version = static_cast<uint32_t>(version);
  m.pid = static_cast<int64_t>(pid);
  ZYGO_RETURN_IF_ERROR(ValidateHello(m));
  return m;
}

absl::StatusOr<RunMessage> DecodeRun(const ReceivedFrame& received) {
  // The type first; the fd count depends on the payload's layout and is checked below.
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kRun, received.fds.size()));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader, FieldReader::Parse(received.frame.payload, kRunSchema));
  const uint64_t layout = *reader.U64(kRunFdLayout);
  if (layout > static_cast<uint64_t>(FdLayout::kResultPipe)) {
    return Invalid(MessageType::kRun, absl::StrCat("unknown fd layout ", layout));
  }
  RunMessage m;
  m.request_id = received.frame.request_id;
  m.entry = std::string(*reader.Bytes(kRunEntry));
  m.event = std::string(reader.Bytes(kRunEvent).value_or(""));
  m.deadline_ms = *reader.U64(kRunDeadlineMs);
  m.fd_layout = static_cast<FdLayout>(layout);
  m.code = std::string(reader.Bytes(kRunCode).value_or(""));
  m.bytecode = std::string(reader.Bytes(kRunBytecode).value_or(""));
  const uint64_t report_touched = reader.U64(kRunReportTouched).value_or(0);
  if (report_touched > 1) {
    return Invalid(MessageType::kRun, absl::StrCat("report_touched ", report_touched));
  }
  m.report_touched = report_touched == 1;
  const std::optional<uint64_t> event_fd_size = reader.U64(kRunEventFdSize);
  if (event_fd_size.has_value() && *event_fd_size == 0) {
    return Invalid(MessageType::kRun, "an event memfd of 0 bytes");
  }
  m.event_fd_size = event_fd_size.value_or(0);
  ZYGO_RETURN_IF_ERROR(ValidateRun(m));
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kRun, RunFdCount(m)));
  return m;
}

absl::StatusOr<ForkedMessage> DecodeForked(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kForked, kForkedFdCount));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kForkedSchema));
  const uint64_t pid = *reader.U64(kForkedPid);
  ZYGO_RETURN_IF_ERROR(CheckPid(MessageType::kForked, pid));
  ForkedMessage m;
  m.request_id = received.frame.request_id;
  m.pid = static_cast<int64_t>(pid);
  ZYGO_RETURN_IF_ERROR(ValidateForked(m));
  return m;
}

absl::StatusOr<SpawnMessage> DecodeSpawn(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kSpawn, 0));
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kSpawn, received.frame.request_id));
  return SpawnMessage{received.frame.request_id};
}

absl::StatusOr<DoneMessage> DecodeDone(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kDone, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kDoneSchema));
  const uint64_t kind = *reader.U64(kDoneExitKind);
  const uint64_t code = *reader.U64(kDoneExitCode);
  if (kind != static_cast<uint64_t>(ExitKind::kExited) &&
      kind != static_cast<uint64_t>(ExitKind::kSignalled)) {
    return Invalid(MessageType::kDone, absl::StrCat("unknown exit kind ", kind));
  }
  if (code > 255) return Invalid(MessageType::kDone, absl::StrCat("exit code ", code));
  DoneMessage m;
  m.request_id = received.frame.request_id;
  m.exit_kind = static_cast<ExitKind>(kind);
  m.exit_code = static_cast<int32_t>(code);
  m.result = std::string(reader.Bytes(kDoneResult).value_or(""));
  ZYGO_RETURN_IF_ERROR(ValidateDone(m));
  return m;
}

absl::StatusOr<ErrorMessage> DecodeError(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kError, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kErrorSchema));
  const uint64_t code = *reader.U64(kErrorCode);
  if (code < 1 || code > 16) return Invalid(MessageType::kError, absl::StrCat("bad code ", code));
  ErrorMessage m;
  m.request_id = received.frame.request_id;
  m.code = static_cast<absl::StatusCode>(code);
  m.message = std::string(reader.Bytes(kErrorMessage).value_or(""));
  ZYGO_RETURN_IF_ERROR(ValidateError(m));
  return m;
}

absl::StatusOr<FailedMessage> DecodeFailed(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kFailed, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kFailedSchema));
  FailedMessage m;
  m.request_id = received.frame.request_id;
  m.error_type = std::string(*reader.Bytes(kFailedErrorType));
  m.message = std::string(reader.Bytes(kFailedMessage).value_or(""));
  m.traceback = std::string(reader.Bytes(kFailedTraceback).value_or(""));
  ZYGO_RETURN_IF_ERROR(ValidateFailed(m));
  return m;
}

absl::StatusOr<PingMessage> DecodePing(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kPing, 0));
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  return PingMessage{received.frame.request_id};
}

absl::StatusOr<PongMessage> DecodePong(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kPong, 0));
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  return PongMessage{received.frame.request_id};
}

absl::StatusOr<JoinMessage> DecodeJoin(const ReceivedFrame& received) {
  // One to kMaxFdsPerFrame files (one per hierarchy): any count in range is the count
  // wanted; outside it, asking for 1 makes CheckFrame refuse with the count it got.
  const size_t fds = received.fds.size();
  ZYGO_RETURN_IF_ERROR(
      CheckFrame(received, MessageType::kJoin, fds >= 1 && fds <= kMaxFdsPerFrame ? fds : 1));
  if (received.frame.request_id != 0) return Invalid(MessageType::kJoin, "request id must be 0");
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  return JoinMessage{};
}

absl::StatusOr<JoinedMessage> DecodeJoined(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kJoined, 0));
  if (received.frame.request_id != 0) return Invalid(MessageType::kJoined, "request id must be 0");
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  return JoinedMessage{};
}

absl::StatusOr<CompiledMessage> DecodeCompiled(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kCompiled, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kCompiledSchema));
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kCompiled, received.frame.request_id));
  return CompiledMessage{received.frame.request_id,
                         std::string(*reader.Bytes(kCompiledBytecode))};
}

absl::StatusOr<Frame> Encode(const TouchedMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kTouched, m.request_id));
  ZYGO_RETURN_IF_ERROR(ValidatePageRuns(MessageType::kTouched, m.runs));
  FieldWriter writer;
  if (!m.runs.empty()) writer.AddBytes(kPageRuns, PackPageRuns(m.runs));
  return CheckedFrame(MakeFrame(MessageType::kTouched, m.request_id, writer.Finish()));
}

absl::StatusOr<Frame> Encode(const PrefaultMessage& m) {
  if (m.runs.empty()) return Invalid(MessageType::kPrefault, "no page runs");
  ZYGO_RETURN_IF_ERROR(ValidatePageRuns(MessageType::kPrefault, m.runs));
  return CheckedFrame(MakeFrame(MessageType::kPrefault, 0,
                                FieldWriter().AddBytes(kPageRuns, PackPageRuns(m.runs)).Finish()));
}

absl::StatusOr<TouchedMessage> DecodeTouched(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kTouched, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kTouchedSchema));
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kTouched, received.frame.request_id));
  TouchedMessage m;
  m.request_id = received.frame.request_id;
  ZYGO_ASSIGN_OR_RETURN(
      m.runs, UnpackPageRuns(MessageType::kTouched, reader.Bytes(kPageRuns).value_or("")));
  return m;
}

absl::StatusOr<PrefaultMessage> DecodePrefault(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kPrefault, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kPrefaultSchema));
  if (received.frame.request_id != 0) {
    return Invalid(MessageType::kPrefault, "request id must be 0");
  }
  PrefaultMessage m;
  ZYGO_ASSIGN_OR_RETURN(m.runs, UnpackPageRuns(MessageType::kPrefault, *reader.Bytes(kPageRuns)));
  if (m.runs.empty()) return Invalid(MessageType::kPrefault, "no page runs");
  return m;
}

}  // namespace zygo::wire
