// The warm-path messages and their payload schemas. Each Encode validates the values and
// builds a Frame; each Decode checks the frame's type, fd count and request id, then parses
// the payload strictly (see fields.h). Decoders take untrusted input and never crash on it.
//
// Protocol v6 has two kinds of channel (both SOCK_SEQPACKET socketpairs):
//   zygote channel (supervisor <-> zygote agent):  zygote: Hello;  supervisor: Spawn(spare);
//     the forked CHILD itself: Forked(spare, pid, +1 fd: the supervisor's end of a new child
//     channel), so SCM_CREDENTIALS name the child;  zygote, once it reaped the child:
//     Done(spare, exit status). EOF from the supervisor: the zygote exits.
//   child channel (supervisor <-> one spare):  supervisor: Run(request, +fds: the layout's,
//     then the event memfd when the event did not fit in the frame);  child:
//     Done(result, exit 0) or Failed(type, message, traceback, exit 1); a pool child given
//     a script's source may first send Compiled(bytecode), made before any of it ran; a
//     child whose Run said report_touched sends Touched(pages) after its Done. Before a Run,
//     the supervisor may send Prefault(pages): pages an earlier child touched, to take now.
// Either side may send Error instead of its next message; Ping/Pong check liveness.
#ifndef ZYGO_AGENTS_WIRE_MESSAGES_H_
#define ZYGO_AGENTS_WIRE_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agents/wire/frame.h"

namespace zygo::wire {

inline constexpr size_t kMaxAgentKindSize = 32;
inline constexpr size_t kMaxEntrySize = 4096;
inline constexpr size_t kMaxErrorMessageSize = 4096;
inline constexpr size_t kMaxErrorTypeSize = 256;
inline constexpr size_t kMaxFailedMessageSize = 4096;
inline constexpr size_t kMaxTracebackSize = 64 * 1024;
// A Forked frame carries exactly this many fds: the supervisor's end of the child channel.
inline constexpr size_t kForkedFdCount = 1;
inline constexpr uint64_t kMaxDeadlineMs = 24ull * 60 * 60 * 1000;
// PID_MAX_LIMIT on 64-bit Linux (include/linux/threads.h).
inline constexpr int64_t kMaxPid = 4 * 1024 * 1024;
// Touched and Prefault: at most this many runs (16 bytes each on the wire) and pages.
inline constexpr size_t kMaxPageRuns = 4096;
inline constexpr uint64_t kMaxPageRunPages = 64 * 1024;  // 256 MiB of 4 KiB pages
inline constexpr uint64_t kPageBytes = 4096;
// The largest event a Run carries, inline or in an event memfd (event_memfd.h). The
// supervisor's API takes no larger one (supervisor/event_limit.h).
inline constexpr uint64_t kMaxEventBytes = uint64_t{16} << 20;

// Which fds a Run frame carries, in order.
enum class FdLayout : uint8_t {
  kNone = 0,
  kStdio = 1,       // stdin, stdout, stderr of the request.
  kResultPipe = 2,  // the write end of a pipe the result is streamed into.
};
size_t FdCount(FdLayout layout);

// zygote -> supervisor, first frame on a new zygote channel, once the agent is warm (its
// handler imported). request_id is 0.
struct HelloMessage {
  std::string agent_kind;  // [a-z0-9_-]{1,32}, e.g. "python".
  uint32_t protocol_version = kProtocolVersion;
  int64_t pid = 0;  // The zygote's pid in its own pid namespace.
};

// supervisor -> child (child channel): run one request in this spare.
struct RunMessage {
  uint64_t request_id = 0;   // Non-zero; echoed by the child's Done, Failed and Error.
  std::string entry;         // Handler ("file.py:function") or script digest; 1..4096 bytes.
  std::string event;         // The request's input, opaque to the protocol.
  uint64_t deadline_ms = 0;  // 1..kMaxDeadlineMs, relative to receipt.
  FdLayout fd_layout = FdLayout::kNone;
  std::string code;  // Optional: a runtime pool's script source; empty when absent.
  // Optional, exclusive with `code`: the script as a Compiled message from a child of the
  // same zygote carried it (opaque to the protocol; the agent that made it reads it).
  std::string bytecode;
  // Optional: after its Done, the child sends Touched (an agent that cannot may ignore it).
  bool report_touched = false;
  // Non-zero (v6): the event is not in `event` (which is then empty) but in a sealed
  // memfd of exactly this many bytes, 1..kMaxEventBytes, carried after the layout's fds
  // (MakeEventMemfd / ReadEventMemfd in event_memfd.h).
  uint64_t event_fd_size = 0;
};

// Adjacent pages of a process's memory, by address (the same in every child of a zygote).
struct PageRun {
  uint64_t start = 0;  // page-aligned
  uint32_t pages = 0;  // at least 1
  bool write = false;  // private writable memory, taken by a write; else read only
  bool operator==(const PageRun& other) const {
    return start == other.start && pages == other.pages && write == other.write;
  }
};

// child -> supervisor (child channel), after Done when the Run asked for it: the pages this
// process touched since the fork (present in its page tables; of private writable memory,
// those no longer shared with the zygote). At most kMaxPageRuns runs and kMaxPageRunPages
// pages; may be empty.
struct TouchedMessage {
  uint64_t request_id = 0;
  std::vector<PageRun> runs;
};

// supervisor -> child (child channel), before its Run, request_id 0: take these pages now
// (write-fault or map them), so the request does not. Not answered. Same bounds, not empty.
struct PrefaultMessage {
  std::vector<PageRun> runs;
};

// child -> supervisor (child channel), optional, before Done/Failed: the Run's `code`
// compiled, sent before the script's module body ran or the event was decoded, so it
// depends on that source alone. The supervisor may send it back as Run.bytecode for the
// same script on this zygote's later spares, which then skip the compiler.
struct CompiledMessage {
  uint64_t request_id = 0;
  std::string bytecode;  // 1..kMaxPayloadSize bytes.
};

// supervisor -> zygote: fork one spare ahead of demand. request_id is the spare id.
struct SpawnMessage {
  uint64_t spare_id = 0;  // Non-zero; echoed by Forked and by the zygote's Done.
};

// child -> supervisor over the zygote channel, sent by the child itself so the kernel's
// SCM_CREDENTIALS name it. Carries kForkedFdCount fds: the supervisor's end of the child
// channel (passed to SendFrame; left owned by the ReceivedFrame on decode).
struct ForkedMessage {
  uint64_t request_id = 0;  // The spare id from Spawn.
  int64_t pid = 0;          // getpid() in the child's own pid namespace; trust sender_pid instead.
};

enum class ExitKind : uint8_t {
  kExited = 1,     // exit_code is the exit status, 0..255.
  kSignalled = 2,  // exit_code is the signal number, 1..64.
};

// Two meanings, one per channel:
//  - child channel: the request succeeded. exit_kind kExited, exit_code 0, result = the
//    handler's return value as JSON text; the child then exits 0.
//  - zygote channel: request_id is a spare id; that child was reaped with this exit status
//    (kExited + status or kSignalled + signal); result is empty.
struct DoneMessage {
  uint64_t request_id = 0;
  ExitKind exit_kind = ExitKind::kExited;
  int32_t exit_code = 0;
  std::string result;  // Opaque to the protocol.
};

// child -> supervisor (child channel): the request failed inside the agent: the handler
// raised, the event could not be decoded ("EventError"), the result could not be encoded
// ("ResultError"), or the entry could not be loaded. The child then exits 1.
struct FailedMessage {
  uint64_t request_id = 0;
  std::string error_type;  // 1..kMaxErrorTypeSize bytes, e.g. "ZeroDivisionError".
  std::string message;     // At most kMaxFailedMessageSize bytes; str(exception).
  std::string traceback;   // At most kMaxTracebackSize bytes; may be empty.
};

// Either way. request_id is the request it concerns, or 0 for the connection itself.
struct ErrorMessage {
  uint64_t request_id = 0;
  absl::StatusCode code = absl::StatusCode::kUnknown;  // Never kOk.
  std::string message;                                 // At most kMaxErrorMessageSize bytes.

  absl::Status ToStatus() const { return absl::Status(code, message); }
};

// The first `limit` bytes of `text` at most, not cutting a UTF-8 sequence in half: a text
// field cut to its kMax...Size.
std::string Head(absl::string_view text, size_t limit);

// Error(request_id) carrying `status`'s code and its message cut to kMaxErrorMessageSize
// (Head). `status` must not be OK.
ErrorMessage ErrorFromStatus(uint64_t request_id, const absl::Status& status);

// supervisor -> child (child channel), first, request_id 0, no payload, with 1 to
// kMaxFdsPerFrame fds: the request cgroup's files the child joins (cgroup v1 `tasks`, one
// per hierarchy, opened for writing by the supervisor). The child writes "0" into each, so
// the kernel moves the writing thread itself, which takes none of the global lock a move of
// another process waits for; then it closes them and answers Joined, or Error.
struct JoinMessage {};
// child -> supervisor (child channel): Join done. request_id 0, no payload, no fds.
struct JoinedMessage {};

// supervisor -> child (child channel), once, before any Run: the spare's own /tmp is
// mounted in its own mount namespace (core/nested_tmp.h), so it stacks its Landlock domain
// now (agents/isolation IsolateSpare). request_id 0, no payload, no fds; not answered: a
// spare whose isolation failed refuses its Run.
struct IsolateMessage {};

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
absl::StatusOr<Frame> Encode(const SpawnMessage& message);
absl::StatusOr<Frame> Encode(const DoneMessage& message);
absl::StatusOr<Frame> Encode(const ErrorMessage& message);
absl::StatusOr<Frame> Encode(const PingMessage& message);
absl::StatusOr<Frame> Encode(const PongMessage& message);
absl::StatusOr<Frame> Encode(const FailedMessage& message);
absl::StatusOr<Frame> Encode(const CompiledMessage& message);
absl::StatusOr<Frame> Encode(const TouchedMessage& message);
absl::StatusOr<Frame> Encode(const PrefaultMessage& message);
absl::StatusOr<Frame> Encode(const JoinMessage& message);
absl::StatusOr<Frame> Encode(const JoinedMessage& message);
absl::StatusOr<Frame> Encode(const IsolateMessage& message);

// The fds a Run frame carries: its layout's, plus one when the event rides in a memfd.
size_t RunFdCount(const RunMessage& run);

// Each decoder also requires the number of fds the message type allows: RunFdCount
// for Run, kForkedFdCount for Forked, 1..kMaxFdsPerFrame for Join, none for the others. The fds
// stay owned by `received`.
absl::StatusOr<HelloMessage> DecodeHello(const ReceivedFrame& received);
absl::StatusOr<RunMessage> DecodeRun(const ReceivedFrame& received);
absl::StatusOr<ForkedMessage> DecodeForked(const ReceivedFrame& received);
absl::StatusOr<SpawnMessage> DecodeSpawn(const ReceivedFrame& received);
absl::StatusOr<DoneMessage> DecodeDone(const ReceivedFrame& received);
absl::StatusOr<ErrorMessage> DecodeError(const ReceivedFrame& received);
absl::StatusOr<PingMessage> DecodePing(const ReceivedFrame& received);
absl::StatusOr<PongMessage> DecodePong(const ReceivedFrame& received);
absl::StatusOr<FailedMessage> DecodeFailed(const ReceivedFrame& received);
absl::StatusOr<CompiledMessage> DecodeCompiled(const ReceivedFrame& received);
absl::StatusOr<TouchedMessage> DecodeTouched(const ReceivedFrame& received);
absl::StatusOr<PrefaultMessage> DecodePrefault(const ReceivedFrame& received);
absl::StatusOr<JoinMessage> DecodeJoin(const ReceivedFrame& received);
absl::StatusOr<JoinedMessage> DecodeJoined(const ReceivedFrame& received);
absl::StatusOr<IsolateMessage> DecodeIsolate(const ReceivedFrame& received);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_MESSAGES_H_
