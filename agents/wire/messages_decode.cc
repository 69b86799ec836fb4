// Decoding each warm-path message: the frame, then every field against its schema.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/fields.h"
#include "agents/wire/internal/message_schema.h"
#include "agents/wire/messages.h"
#include "core/base/status_macros.h"

namespace zygo::wire {

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

absl::StatusOr<IsolateMessage> DecodeIsolate(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kIsolate, 0));
  if (received.frame.request_id != 0) {
    return Invalid(MessageType::kIsolate, "request id must be 0");
  }
  ZYGO_RETURN_IF_ERROR(FieldReader::Parse(received.frame.payload, {}).status());
  return IsolateMessage{};
}

absl::StatusOr<CompiledMessage> DecodeCompiled(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kCompiled, 0));
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kCompiledSchema));
  ZYGO_RETURN_IF_ERROR(CheckRequestId(MessageType::kCompiled, received.frame.request_id));
  return CompiledMessage{received.frame.request_id, std::string(*reader.Bytes(kCompiledBytecode))};
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
