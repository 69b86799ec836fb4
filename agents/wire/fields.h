// The payload encoding: a sequence of fields, each {tag u16, length u32, value}, all
// little-endian. Integers are 8-byte values; bytes are raw. Tags are strictly ascending,
// so each field appears at most once and every message has exactly one encoding.
#ifndef ZYGO_AGENTS_WIRE_FIELDS_H_
#define ZYGO_AGENTS_WIRE_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zygo::wire {

inline constexpr size_t kFieldHeaderSize = 6;

enum class FieldKind { kU64, kBytes };

// What a decoder accepts for one tag. `max_len` bounds kBytes values.
struct FieldSpec {
  uint16_t tag;
  FieldKind kind;
  size_t max_len;
  bool required;
};

// Builds a payload. Callers add fields in ascending tag order; the tags are constants in
// messages.cc, and the round-trip tests catch an out-of-order writer because Parse refuses it.
class FieldWriter {
 public:
  FieldWriter& AddU64(uint16_t tag, uint64_t value);
  FieldWriter& AddBytes(uint16_t tag, absl::string_view value);
  // Hands over the payload built so far; the writer is empty afterwards.
  std::string Finish() { return std::move(out_); }

 private:
  void AddHeader(uint16_t tag, uint32_t len);

  std::string out_;
};

// The fields of one parsed payload, checked against a schema. Views point into the
// payload passed to Parse, which must outlive the reader.
class FieldReader {
 public:
  // Parses untrusted `payload`: every field must be in `schema`, tags ascending (no
  // duplicates), lengths within bounds, u64 fields exactly 8 bytes, required fields present,
  // and no trailing bytes.
  static absl::StatusOr<FieldReader> Parse(absl::string_view payload,
                                           absl::Span<const FieldSpec> schema);

  // The value of a field, or nullopt when it is absent (or asked for with the wrong kind).
  std::optional<uint64_t> U64(uint16_t tag) const;
  std::optional<absl::string_view> Bytes(uint16_t tag) const;

 private:
  struct Field {
    uint16_t tag;
    FieldKind kind;
    absl::string_view value;
  };
  const Field* Find(uint16_t tag, FieldKind kind) const;

  std::vector<Field> fields_;
};

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_FIELDS_H_
