#include "agents/wire/internal/message_schema.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace zygo::wire {

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

}  // namespace zygo::wire
