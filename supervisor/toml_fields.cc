#include "supervisor/toml_fields.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/units.h"

namespace zygo::supervisor {
namespace {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

const char* TypeName(const toml::node& node) {
  static constexpr const char* kNames[] = {"nothing",    "a table",    "an array",  "a string",
                                           "an integer", "a float",    "a boolean", "a date",
                                           "a time",     "a date-time"};
  return kNames[static_cast<int>(node.type())];
}

// "0", "0s", "0.0m": cold_after's spelling of "never".
bool IsZeroDuration(absl::string_view text) {
  size_t i = 0;
  bool zero_seen = false;
  while (i < text.size() && (text[i] == '0' || text[i] == '.')) zero_seen |= text[i++] == '0';
  absl::string_view unit = text.substr(i);
  return zero_seen && (unit.empty() || unit == "ms" || unit == "s" || unit == "m" || unit == "h");
}

}  // namespace

std::string Quote(absl::string_view text) { return absl::StrCat("\"", absl::CEscape(text), "\""); }

absl::Status TomlFields::Error(uint32_t line, absl::string_view field,
                               absl::string_view message) const {
  std::string where = line == 0 ? origin_ : absl::StrCat(origin_, ":", line);
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, ": ", message));
}

absl::Status TomlFields::Error(const toml::node& node, absl::string_view field,
                               absl::string_view message) const {
  return Error(node.source().begin.line, field, message);
}

absl::Status TomlFields::WrongType(const toml::node& node, absl::string_view field,
                                   absl::string_view wanted) const {
  return Error(node, field, absl::StrCat("expected ", wanted, ", found ", TypeName(node)));
}

std::string TomlFields::Suggestion(absl::string_view table, absl::string_view key) const {
  std::string best;
  size_t best_distance = key.size() < 5 ? 1 : 2;
  for (const auto& [other_table, keys] : known_) {
    for (const std::string& known : keys) {
      size_t distance = EditDistance(key, known);
      // The same key in another table only counts when spelt exactly.
      if (other_table != table && distance != 0) continue;
      if (distance <= best_distance && (best.empty() || distance < best_distance)) {
        best_distance = distance;
        if (other_table == table) {
          best = Quote(known);
        } else if (other_table.empty()) {
          best = absl::StrCat(Quote(known), " at the top, before any [table]");
        } else {
          best = Quote(absl::StrCat(other_table, ".", known));
        }
      }
    }
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean ", best, "?)");
}

absl::Status TomlFields::CheckKeys(const toml::table& table, const std::string& table_name) const {
  const std::vector<std::string>& known = known_.at(table_name);
  for (auto&& [key, node] : table) {
    std::string name(key.str());
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string field = table_name.empty() ? name : absl::StrCat(table_name, ".", name);
    return Error(key.source().begin.line, field,
                 absl::StrCat("unknown key", Suggestion(table_name, name)));
  }
  return absl::OkStatus();
}

absl::Status TomlFields::GetString(const toml::node& node, absl::string_view field,
                                   std::string* out) const {
  if (!node.is_string()) return WrongType(node, field, "a string");
  *out = node.as_string()->get();
  if (out->find('\0') != std::string::npos) return Error(node, field, "contains a NUL byte");
  return absl::OkStatus();
}

absl::Status TomlFields::GetStringList(const toml::node& node, absl::string_view field,
                                       std::vector<std::string>* out) const {
  if (!node.is_array()) return WrongType(node, field, "an array of strings");
  out->clear();
  const toml::array& array = *node.as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    std::string item;
    ZYGO_RETURN_IF_ERROR(GetString(array[i], absl::StrCat(field, "[", i, "]"), &item));
    out->push_back(std::move(item));
  }
  return absl::OkStatus();
}

absl::Status TomlFields::GetInt(const toml::node& node, absl::string_view field, int64_t min,
                                int64_t max, int64_t* out) const {
  if (!node.is_integer()) return WrongType(node, field, "an integer");
  *out = node.as_integer()->get();
  if (*out < min || *out > max) {
    return Error(node, field, absl::StrCat(*out, " is out of range (", min, "..", max, ")"));
  }
  return absl::OkStatus();
}

absl::Status TomlFields::GetDuration(const toml::node& node, absl::string_view field,
                                     bool allow_zero, int64_t max_hours, int64_t* out_ms) const {
  std::string text;
  if (node.is_integer()) {
    text = absl::StrCat(node.as_integer()->get());
  } else if (!node.is_string()) {
    return WrongType(node, field, "a duration such as \"30s\"");
  } else {
    text = node.as_string()->get();
  }
  if (allow_zero && IsZeroDuration(text)) {
    *out_ms = 0;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> ms = core::ParseDurationMs(text);
  if (!ms.ok()) {
    return Error(
        node, field,
        absl::StrCat(Quote(text), " is not a duration (use 500ms, 30s, 10m, 1h; at most 7 days)"));
  }
  if (*ms > max_hours * 3'600'000) {
    return Error(node, field,
                 absl::StrCat(Quote(text), " is more than the maximum, ", max_hours, "h"));
  }
  *out_ms = *ms;
  return absl::OkStatus();
}

}  // namespace zygo::supervisor
