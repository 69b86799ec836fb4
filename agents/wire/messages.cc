// Encoding each warm-path message: checked against its schema before it is sent.
#include "agents/wire/messages.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/fields.h"
#include "agents/wire/internal/message_schema.h"
#include "core/base/status_macros.h"

namespace zygo::wire {

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

absl::StatusOr<Frame> Encode(const IsolateMessage&) {
  return MakeFrame(MessageType::kIsolate, 0, "");
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

}  // namespace zygo::wire
