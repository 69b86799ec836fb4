// The event size limit's errors: one wording for every front end.
#include "supervisor/event_limit.h"

#include <algorithm>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace zygo::supervisor {
namespace {

// The payload that marks the error; its value carries nothing.
constexpr char kEventTooLargeUrl[] = "type.zygo.dev/event_too_large";

absl::Status Marked(std::string message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kEventTooLargeUrl, absl::Cord(""));
  return status;
}

}  // namespace

absl::Status EventTooLargeError(std::optional<uint64_t> size) {
  const std::string how_large = size.has_value()
                                    ? absl::StrCat(*size, " bytes")
                                    : absl::StrCat("more than ", kMaxEventBytes, " bytes");
  return Marked(absl::StrCat("event is ", how_large, "; the limit is ", kMaxEventBytes, " bytes"));
}

bool IsEventTooLarge(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kEventTooLargeUrl).has_value();
}

absl::Status CheckEventSize(size_t event_bytes, size_t stdin_bytes) {
  const size_t larger = std::max(event_bytes, stdin_bytes);
  return larger > kMaxEventBytes ? EventTooLargeError(larger) : absl::OkStatus();
}

}  // namespace zygo::supervisor
