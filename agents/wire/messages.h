// The warm-path messages and their payload schemas. Each Encode validates the values and
// builds a Frame; each Decode checks the frame's type, fd count and request id, then parses
// the payload strictly (see fields.h). Decoders take untrusted input and never crash on it.
//
// A request's exchange:  agent: Hello;  supervisor: Run (+fds);  agent: Forked(pid);
// supervisor: Go (after admitting pid into the request cgroup);  agent: Done.  Either side
// may send Error instead of its next message; Ping/Pong check liveness at any time.
#ifndef ZYGO_AGENTS_WIRE_MESSAGES_H_
#define ZYGO_AGENTS_WIRE_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/wire/frame.h"

namespace zygo::wire {

inline constexpr size_t kMaxAgentKindSize = 32;
inline constexpr size_t kMaxEntrySize = 4096;
inline constexpr size_t kMaxErrorMessageSize = 4096;
inline constexpr uint64_t kMaxDeadlineMs = 24ull * 60 * 60 * 1000;
// PID_MAX_LIMIT on 64-bit Linux (include/linux/threads.h).
inline constexpr int64_t kMaxPid = 4 * 1024 * 1024;

// Which fds a Run frame carries, in order.
enum class FdLayout : uint8_t {
  kNone = 0,
  kStdio = 1,       // stdin, stdout, stderr of the request.
  kResultPipe = 2,  // the write end of a pipe the result is streamed into.
};
size_t FdCount(FdLayout layout);

// agent -> supervisor, first frame on a new connection. request_id is 0.
struct HelloMessage {
  std::string agent_kind;  // [a-z0-9_-]{1,32}, e.g. "python".
  uint32_t protocol_version = kProtocolVersion;
  int64_t pid = 0;  // The zygote's pid in its own pid namespace.
};

// supervisor -> agent: run one request in a forked child.
struct RunMessage {
  uint64_t request_id = 0;   // Non-zero; echoed by Forked, Go, Done and Error.
  std::string entry;         // Handler ("file.py:function") or script digest; 1..4096 bytes.
  std::string event;         // The request's input, opaque to the protocol.
  uint64_t deadline_ms = 0;  // 1..kMaxDeadlineMs, relative to receipt.
  FdLayout fd_layout = FdLayout::kNone;
};

// agent -> supervisor: the child exists and is parked until Go.
struct ForkedMessage {
  uint64_t request_id = 0;
  int64_t pid = 0;  // As the agent sees it; the supervisor maps it to admit the child.
};

// supervisor -> agent: the child is admitted into its cgroup; let it run.
struct GoMessage {
  uint64_t request_id = 0;
};

enum class ExitKind : uint8_t {
  kExited = 1,     // exit_code is the exit status, 0..255.
  kSignalled = 2,  // exit_code is the signal number, 1..64.
};

// agent -> supervisor: the child finished.
struct DoneMessage {
  uint64_t request_id = 0;
  ExitKind exit_kind = ExitKind::kExited;
  int32_t exit_code = 0;
  std::string result;  // The handler's return value, opaque to the protocol.
};

// Either way. request_id is the request it concerns, or 0 for the connection itself.
struct ErrorMessage {
  uint64_t request_id = 0;
  absl::StatusCode code = absl::StatusCode::kUnknown;  // Never kOk.
  std::string message;                                 // At most kMaxErrorMessageSize bytes.

  absl::Status ToStatus() const { return absl::Status(code, message); }
};

// Liveness: the nonce travels as the frame's request_id; Pong echoes it.
struct PingMessage {
  uint64_t nonce = 0;
};
struct PongMessage {
  uint64_t nonce = 0;
};

absl::StatusOr<Frame> Encode(const HelloMessage& message);
absl::StatusOr<Frame> Encode(const RunMessage& message);
absl::StatusOr<Frame> Encode(const ForkedMessage& message);
absl::StatusOr<Frame> Encode(const GoMessage& message);
absl::StatusOr<Frame> Encode(const DoneMessage& message);
absl::StatusOr<Frame> Encode(const ErrorMessage& message);
absl::StatusOr<Frame> Encode(const PingMessage& message);
absl::StatusOr<Frame> Encode(const PongMessage& message);

// Each decoder also requires the number of fds the message type allows: FdCount(fd_layout)
// for Run, none for the others. The fds stay owned by `received`.
absl::StatusOr<HelloMessage> DecodeHello(const ReceivedFrame& received);
absl::StatusOr<RunMessage> DecodeRun(const ReceivedFrame& received);
absl::StatusOr<ForkedMessage> DecodeForked(const ReceivedFrame& received);
absl::StatusOr<GoMessage> DecodeGo(const ReceivedFrame& received);
absl::StatusOr<DoneMessage> DecodeDone(const ReceivedFrame& received);
absl::StatusOr<ErrorMessage> DecodeError(const ReceivedFrame& received);
absl::StatusOr<PingMessage> DecodePing(const ReceivedFrame& received);
absl::StatusOr<PongMessage> DecodePong(const ReceivedFrame& received);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_MESSAGES_H_
