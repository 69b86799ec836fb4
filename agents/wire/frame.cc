// Fixed-header encoding for wire frames.
#include "agents/wire/frame.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agents/wire/little_endian.h"

namespace zygo::wire {
bool IsKnownMessageType(uint16_t raw) {
  return raw >= static_cast<uint16_t>(MessageType::kHello) &&
         raw <= static_cast<uint16_t>(MessageType::kSeal);
}

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "Hello";
    case MessageType::kRun:
      return "Run";
    case MessageType::kForked:
      return "Forked";
    case MessageType::kSpawn:
      return "Spawn";
    case MessageType::kDone:
      return "Done";
    case MessageType::kError:
      return "Error";
    case MessageType::kPing:
      return "Ping";
    case MessageType::kPong:
      return "Pong";
    case MessageType::kFailed:
      return "Failed";
    case MessageType::kCompiled:
      return "Compiled";
    case MessageType::kTouched:
      return "Touched";
    case MessageType::kPrefault:
      return "Prefault";
    case MessageType::kJoin:
      return "Join";
    case MessageType::kJoined:
      return "Joined";
    case MessageType::kIsolate:
      return "Isolate";
    case MessageType::kSeal:
      return "Seal";
  }
  return "Unknown";
}

absl::StatusOr<std::string> EncodeFrame(const Frame& frame, size_t fd_count) {
  if (!IsKnownMessageType(static_cast<uint16_t>(frame.type))) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame type ", static_cast<uint16_t>(frame.type), " is not a message type"));
  }
  if (frame.payload.size() > kMaxPayloadSize) {
    return absl::InvalidArgumentError(absl::StrCat("frame payload of ", frame.payload.size(),
                                                   " bytes exceeds ", kMaxPayloadSize));
  }
  if (fd_count > kMaxFdsPerFrame) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame carries ", fd_count, " fds, more than ", kMaxFdsPerFrame));
  }
  std::string out;
  out.reserve(kHeaderSize + frame.payload.size());
  PutLe(out, kMagic, 4);
  PutLe(out, kProtocolVersion, 2);
  PutLe(out, static_cast<uint16_t>(frame.type), 2);
  PutLe(out, fd_count & kFlagsFdCountMask, 4);
  PutLe(out, frame.request_id, 8);
  PutLe(out, frame.payload.size(), 4);
  out.append(frame.payload);
  return out;
}

absl::StatusOr<FrameHeader> DecodeHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame of ", bytes.size(), " bytes is shorter than the header"));
  }
  if (uint32_t magic = GetLe(bytes, 0, 4); magic != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat("bad frame magic 0x", absl::Hex(magic)));
  }
  if (uint16_t version = GetLe(bytes, 4, 2); version != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("peer speaks wire protocol version ", version,
                                                      ", this side speaks ", kProtocolVersion));
  }
  const uint16_t raw_type = GetLe(bytes, 6, 2);
  if (!IsKnownMessageType(raw_type)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown message type ", raw_type));
  }
  FrameHeader header;
  header.type = static_cast<MessageType>(raw_type);
  header.flags = GetLe(bytes, 8, 4);
  header.request_id = GetLe(bytes, 12, 8);
  header.payload_len = GetLe(bytes, 20, 4);
  if ((header.flags & ~kFlagsFdCountMask) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("reserved frame flags set: 0x", absl::Hex(header.flags)));
  }
  if (header.fd_count() > kMaxFdsPerFrame) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame declares ", header.fd_count(), " fds, more than ", kMaxFdsPerFrame));
  }
  if (header.payload_len > kMaxPayloadSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "frame declares a payload of ", header.payload_len, " bytes, over ", kMaxPayloadSize));
  }
  if (header.payload_len != bytes.size() - kHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat("frame declares a payload of ",
                                                   header.payload_len, " bytes but carries ",
                                                   bytes.size() - kHeaderSize));
  }
  return header;
}

}  // namespace zygo::wire
