// One wire frame between the supervisor and a zygote agent: a fixed 24-byte little-endian
// header, a payload, and up to kMaxFdsPerFrame fds. Pure encoding; no I/O here.
#ifndef ZYGO_AGENTS_WIRE_FRAME_H_
#define ZYGO_AGENTS_WIRE_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {

// The bytes "ZYGO" as they appear on the wire, read as a little-endian u32.
inline constexpr uint32_t kMagic = 0x4F47595A;
inline constexpr uint16_t kProtocolVersion = 8;
inline constexpr size_t kHeaderSize = 24;
// One frame is one SOCK_SEQPACKET datagram; the default unix socket buffer (wmem_default,
// 212992 bytes) holds it whole, so 128 KiB of payload never needs a sysctl.
inline constexpr size_t kMaxPayloadSize = 128 * 1024;
inline constexpr size_t kMaxFrameSize = kHeaderSize + kMaxPayloadSize;
// Enough for a request's stdin/stdout/stderr plus one spare.
inline constexpr size_t kMaxFdsPerFrame = 4;

// Header flags: bits 0-7 declare how many fds ride with the frame; bits 8-31 are reserved
// and must be zero, so a newer peer's flag is refused instead of silently ignored.
inline constexpr uint32_t kFlagsFdCountMask = 0xFF;

// Two kinds of channel carry these (see messages.h): the zygote channel (supervisor <->
// zygote agent) and one child channel per forked spare (supervisor <-> that child).
enum class MessageType : uint16_t {
  kHello = 1,      // zygote -> supervisor: kind, protocol version, pid.
  kRun = 2,        // supervisor -> child: entry, event, deadline, code or bytecode; fds.
  kForked = 3,     // child -> supervisor over the zygote channel: pid + the child channel's fd.
  kSpawn = 4,      // supervisor -> zygote: fork one spare ahead of demand.
  kDone = 5,       // child: the result; zygote: a spare was reaped (exit status).
  kError = 6,      // either way: status code + message.
  kPing = 7,       // liveness probe; request_id is the nonce.
  kPong = 8,       // answer to kPing with the same request_id.
  kFailed = 9,     // child -> supervisor: the handler raised (type, message, traceback).
  kCompiled = 10,  // child -> supervisor: a pool script's bytecode, before it runs.
  kTouched = 11,   // child -> supervisor, after Done when asked: the pages it touched.
  kPrefault = 12,  // supervisor -> child, before Run: pages to take ahead of the request.
  kJoin = 13,      // supervisor -> child, before Prefault: its request cgroup's files; fds.
  kJoined = 14,    // child -> supervisor: it wrote itself into every file of the Join.
  kIsolate = 15,   // supervisor -> child, before Run: its own /tmp is mounted; isolate.
  kSeal = 16,      // supervisor -> a forked function zygote: its namespaces are ready; the function.
};

// Returns true for the values listed in MessageType.
bool IsKnownMessageType(uint16_t raw);
const char* MessageTypeName(MessageType type);

struct Frame {
  MessageType type = MessageType::kPing;
  uint64_t request_id = 0;
  std::string payload;
};

// A frame as received: it owns the fds that came with it (opened O_CLOEXEC).
struct ReceivedFrame {
  Frame frame;
  std::vector<base::UniqueFd> fds;
  // The sending process's pid as the kernel saw it (SCM_CREDENTIALS), translated into the
  // receiver's pid namespace; 0 unless the receiving socket has SO_PASSCRED
  // (EnablePeerCredentials). Unlike any pid in a payload, the sender cannot forge it.
  int64_t sender_pid = 0;
};

// The decoded fixed header.
struct FrameHeader {
  MessageType type = MessageType::kPing;
  uint32_t flags = 0;
  uint64_t request_id = 0;
  uint32_t payload_len = 0;

  size_t fd_count() const { return flags & kFlagsFdCountMask; }
};

// Serialises header + payload for a frame carrying `fd_count` fds. Fails if the payload or
// fd count exceeds the limits above. Either side of the fork; allocates.
absl::StatusOr<std::string> EncodeFrame(const Frame& frame, size_t fd_count);

// Parses and checks the header of one whole datagram `bytes`: magic, version, known type,
// reserved flags, fd count limit, and payload_len == bytes.size() - kHeaderSize (a datagram
// is never a partial frame). Input is untrusted.
absl::StatusOr<FrameHeader> DecodeHeader(absl::string_view bytes);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_FRAME_H_
