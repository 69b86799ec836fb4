// Tag-length-value payload fields with strict parsing.
#include "agents/wire/fields.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agents/wire/little_endian.h"

namespace zygo::wire {
namespace {

const FieldSpec* FindSpec(absl::Span<const FieldSpec> schema, uint16_t tag) {
  for (const FieldSpec& spec : schema) {
    if (spec.tag == tag) return &spec;
  }
  return nullptr;
}

}  // namespace

void FieldWriter::AddHeader(uint16_t tag, uint32_t len) {
  PutLe(out_, tag, 2);
  PutLe(out_, len, 4);
}

FieldWriter& FieldWriter::AddU64(uint16_t tag, uint64_t value) {
  AddHeader(tag, 8);
  PutLe(out_, value, 8);
  return *this;
}

FieldWriter& FieldWriter::AddBytes(uint16_t tag, absl::string_view value) {
  // Oversized values are caught by EncodeFrame's payload limit; 4 GiB cannot reach here.
  AddHeader(tag, static_cast<uint32_t>(value.size()));
  out_.append(value.data(), value.size());
  return *this;
}

absl::StatusOr<FieldReader> FieldReader::Parse(absl::string_view payload,
                                               absl::Span<const FieldSpec> schema) {
  FieldReader reader;
  size_t offset = 0;
  int last_tag = -1;
  while (offset < payload.size()) {
    if (payload.size() - offset < kFieldHeaderSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("truncated field header at payload offset ", offset));
    }
    const uint16_t tag = GetLe(payload, offset, 2);
    const uint64_t len = GetLe(payload, offset + 2, 4);
    offset += kFieldHeaderSize;
    const FieldSpec* spec = FindSpec(schema, tag);
    if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown field ", tag));
    if (static_cast<int>(tag) <= last_tag) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", tag, " is duplicated or out of order"));
    }
    last_tag = tag;
    if (len > payload.size() - offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field ", tag, " claims ", len, " bytes, only ", payload.size() - offset, " remain"));
    }
    if (spec->kind == FieldKind::kU64 && len != 8) {
      return absl::InvalidArgumentError(
          absl::StrCat("integer field ", tag, " has length ", len, ", want 8"));
    }
    if (spec->kind == FieldKind::kBytes && len > spec->max_len) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", tag, " of ", len, " bytes exceeds its limit of ", spec->max_len));
    }
    reader.fields_.push_back({tag, spec->kind, payload.substr(offset, len)});
    offset += len;
  }
  for (const FieldSpec& spec : schema) {
    if (spec.required && reader.Find(spec.tag, spec.kind) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("required field ", spec.tag, " is missing"));
    }
  }
  return reader;
}

const FieldReader::Field* FieldReader::Find(uint16_t tag, FieldKind kind) const {
  auto it = std::find_if(fields_.begin(), fields_.end(), [tag, kind](const Field& field) {
    return field.tag == tag && field.kind == kind;
  });
  return it == fields_.end() ? nullptr : &*it;
}

std::optional<uint64_t> FieldReader::U64(uint16_t tag) const {
  const Field* field = Find(tag, FieldKind::kU64);
  if (field == nullptr) return std::nullopt;
  return GetLe(field->value, 0, 8);
}

std::optional<absl::string_view> FieldReader::Bytes(uint16_t tag) const {
  const Field* field = Find(tag, FieldKind::kBytes);
  if (field == nullptr) return std::nullopt;
  return field->value;
}

}  // namespace zygo::wire
