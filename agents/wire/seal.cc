// The Seal message's schema, encoding and strict decoding.
#include "agents/wire/seal.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agents/wire/fields.h"
#include "agents/wire/internal/message_schema.h"
#include "core/base/status_macros.h"

namespace zygo::wire {
namespace {

enum : uint16_t {
  kSealEnv = 1,  // NUL-separated
  kSealWorkdir = 2,
  kSealCodeDir = 3,
  kSealEntry = 4,
  kSealPreload = 5,  // NUL-separated
  kSealFilter = 6,
};

constexpr size_t kMaxPathSize = 4096;

constexpr FieldSpec kSealSchema[] = {
    {kSealEnv, FieldKind::kBytes, kMaxPayloadSize, false},
    {kSealWorkdir, FieldKind::kBytes, kMaxPathSize, true},
    {kSealCodeDir, FieldKind::kBytes, kMaxPathSize, true},
    {kSealEntry, FieldKind::kBytes, kMaxEntrySize, false},
    {kSealPreload, FieldKind::kBytes, kMaxPayloadSize, false},
    {kSealFilter, FieldKind::kBytes, kMaxSealFilterBytes, true},
};

absl::Status CheckList(const std::vector<std::string>& items, size_t max_items, bool environment,
                       absl::string_view what) {
  if (items.size() > max_items) {
    return Invalid(MessageType::kSeal, absl::StrCat(items.size(), " ", what, "; at most ",
                                                    max_items));
  }
  for (const std::string& item : items) {
    if (item.empty() || item.find('\0') != std::string::npos) {
      return Invalid(MessageType::kSeal, absl::StrCat("an empty ", what, " entry or one with NUL"));
    }
    if (environment && (item.find('=') == std::string::npos || item[0] == '=')) {
      return Invalid(MessageType::kSeal, absl::StrCat("env entry \"", Head(item, 64),
                                                      "\" is not KEY=VALUE"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSeal(const SealMessage& m) {
  ZYGO_RETURN_IF_ERROR(CheckList(m.env, kMaxSealEnvEntries, /*environment=*/true, "env"));
  ZYGO_RETURN_IF_ERROR(CheckList(m.preload, kMaxSealPreloads, /*environment=*/false, "preload"));
  for (const std::string* path : {&m.workdir, &m.code_dir}) {
    if (path->empty() || (*path)[0] != '/' || path->find('\0') != std::string::npos) {
      return Invalid(MessageType::kSeal, absl::StrCat("\"", Head(*path, 64),
                                                      "\" is not an absolute path"));
    }
  }
  if (m.seccomp_filter.empty() || m.seccomp_filter.size() % 8 != 0 ||
      m.seccomp_filter.size() > kMaxSealFilterBytes) {
    return Invalid(MessageType::kSeal, absl::StrCat("a seccomp filter of ", m.seccomp_filter.size(),
                                                    " bytes is not 1..4096 instructions"));
  }
  return absl::OkStatus();
}

std::vector<std::string> SplitList(std::optional<absl::string_view> bytes) {
  if (!bytes.has_value()) return {};
  return absl::StrSplit(*bytes, '\0');
}

}  // namespace

absl::StatusOr<Frame> Encode(const SealMessage& m) {
  ZYGO_RETURN_IF_ERROR(ValidateSeal(m));
  FieldWriter writer;
  if (!m.env.empty()) writer.AddBytes(kSealEnv, absl::StrJoin(m.env, std::string(1, '\0')));
  writer.AddBytes(kSealWorkdir, m.workdir);
  writer.AddBytes(kSealCodeDir, m.code_dir);
  if (!m.entry.empty()) writer.AddBytes(kSealEntry, m.entry);
  if (!m.preload.empty()) {
    writer.AddBytes(kSealPreload, absl::StrJoin(m.preload, std::string(1, '\0')));
  }
  writer.AddBytes(kSealFilter, m.seccomp_filter);
  return CheckedFrame(MakeFrame(MessageType::kSeal, 0, writer.Finish()));
}

absl::StatusOr<SealMessage> DecodeSeal(const ReceivedFrame& received) {
  ZYGO_RETURN_IF_ERROR(CheckFrame(received, MessageType::kSeal, kSealFdCount));
  if (received.frame.request_id != 0) return Invalid(MessageType::kSeal, "request id must be 0");
  ZYGO_ASSIGN_OR_RETURN(FieldReader reader,
                        FieldReader::Parse(received.frame.payload, kSealSchema));
  SealMessage m;
  m.env = SplitList(reader.Bytes(kSealEnv));
  m.workdir = std::string(*reader.Bytes(kSealWorkdir));
  m.code_dir = std::string(*reader.Bytes(kSealCodeDir));
  m.entry = std::string(reader.Bytes(kSealEntry).value_or(""));
  m.preload = SplitList(reader.Bytes(kSealPreload));
  m.seccomp_filter = std::string(*reader.Bytes(kSealFilter));
  ZYGO_RETURN_IF_ERROR(ValidateSeal(m));
  return m;
}

}  // namespace zygo::wire
