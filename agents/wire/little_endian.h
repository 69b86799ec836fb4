// Explicit byte order for the wire's integers, so the format does not depend on the host's.
#ifndef ZYGO_AGENTS_WIRE_LITTLE_ENDIAN_H_
#define ZYGO_AGENTS_WIRE_LITTLE_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace zygo::wire {

// Appends the low `bytes` bytes of `value`, least significant first.
inline void PutLe(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// Reads `bytes` bytes at `offset` of `in`, least significant first; the caller has checked
// that they are there.
inline uint64_t GetLe(absl::string_view in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[offset + i])) << (8 * i);
  }
  return value;
}

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_LITTLE_ENDIAN_H_
