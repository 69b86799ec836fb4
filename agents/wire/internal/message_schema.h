// What messages.cc (encode) and messages_decode.cc share: each message's field tags and
// schema, and the checks a message passes before it is sent and after it is received.
#ifndef ZYGO_AGENTS_WIRE_INTERNAL_MESSAGE_SCHEMA_H_
#define ZYGO_AGENTS_WIRE_INTERNAL_MESSAGE_SCHEMA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agents/wire/fields.h"
#include "agents/wire/messages.h"

namespace zygo::wire {

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
inline constexpr size_t kPageRunBytes = 16;

inline constexpr FieldSpec kHelloSchema[] = {
    {kHelloAgentKind, FieldKind::kBytes, kMaxAgentKindSize, true},
    {kHelloProtocolVersion, FieldKind::kU64, 8, true},
    {kHelloPid, FieldKind::kU64, 8, true},
};
inline constexpr FieldSpec kRunSchema[] = {
    {kRunEntry, FieldKind::kBytes, kMaxEntrySize, true},
    {kRunEvent, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunDeadlineMs, FieldKind::kU64, 8, true},
    {kRunFdLayout, FieldKind::kU64, 8, true},
    {kRunCode, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunBytecode, FieldKind::kBytes, kMaxPayloadSize, false},
    {kRunReportTouched, FieldKind::kU64, 8, false},
    {kRunEventFdSize, FieldKind::kU64, 8, false},
};
inline constexpr FieldSpec kCompiledSchema[] = {
    {kCompiledBytecode, FieldKind::kBytes, kMaxPayloadSize, true},
};
inline constexpr FieldSpec kTouchedSchema[] = {
    {kPageRuns, FieldKind::kBytes, kMaxPageRuns* kPageRunBytes, false},
};
inline constexpr FieldSpec kPrefaultSchema[] = {
    {kPageRuns, FieldKind::kBytes, kMaxPageRuns* kPageRunBytes, true},
};
inline constexpr FieldSpec kForkedSchema[] = {{kForkedPid, FieldKind::kU64, 8, true}};
inline constexpr FieldSpec kDoneSchema[] = {
    {kDoneExitKind, FieldKind::kU64, 8, true},
    {kDoneExitCode, FieldKind::kU64, 8, true},
    {kDoneResult, FieldKind::kBytes, kMaxPayloadSize, false},
};
inline constexpr FieldSpec kErrorSchema[] = {
    {kErrorCode, FieldKind::kU64, 8, true},
    {kErrorMessage, FieldKind::kBytes, kMaxErrorMessageSize, false},
};
inline constexpr FieldSpec kFailedSchema[] = {
    {kFailedErrorType, FieldKind::kBytes, kMaxErrorTypeSize, true},
    {kFailedMessage, FieldKind::kBytes, kMaxFailedMessageSize, false},
    {kFailedTraceback, FieldKind::kBytes, kMaxTracebackSize, false},
};

// The checks, each named for what it checks; an error is InvalidArgument naming the
// message type ("Run: entry is empty").
absl::Status Invalid(MessageType type, absl::string_view what);
absl::Status CheckFrame(const ReceivedFrame& received, MessageType want, size_t want_fds);
absl::Status CheckRequestId(MessageType type, uint64_t request_id);
absl::Status CheckPid(MessageType type, uint64_t pid);
absl::Status ValidateHello(const HelloMessage& m);
absl::Status ValidateRun(const RunMessage& m);
absl::Status ValidatePageRuns(MessageType type, const std::vector<PageRun>& runs);
std::string PackPageRuns(const std::vector<PageRun>& runs);
absl::StatusOr<std::vector<PageRun>> UnpackPageRuns(MessageType type, absl::string_view bytes);
absl::Status ValidateForked(const ForkedMessage& m);
absl::Status ValidateDone(const DoneMessage& m);
absl::Status ValidateFailed(const FailedMessage& m);
absl::Status ValidateError(const ErrorMessage& m);
// A frame of `type` with `payload`, and the frame-size check every encoder ends with.
Frame MakeFrame(MessageType type, uint64_t request_id, std::string payload);
absl::StatusOr<Frame> CheckedFrame(Frame frame);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_INTERNAL_MESSAGE_SCHEMA_H_
