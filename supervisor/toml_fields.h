// Reading a TOML table field by field, with errors that name the file, the line and the
// field ("hello.toml:4: limits.memory: expected a string, found an integer") and unknown
// keys answered with a suggestion. What a function spec (function_spec.cc) is read with.
#ifndef ZYGO_SUPERVISOR_TOML_FIELDS_H_
#define ZYGO_SUPERVISOR_TOML_FIELDS_H_

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zygo::supervisor {

// "\"text\"", C-escaped, as errors quote values.
std::string Quote(absl::string_view text);

// The keys each table may hold ("" is the top level); anything else is an error.
using KnownKeys = std::map<std::string, std::vector<std::string>>;

class TomlFields {
 public:
  // `known` must outlive this object.
  TomlFields(std::string origin, const KnownKeys& known)
      : origin_(std::move(origin)), known_(known) {}

  // "ORIGIN:LINE: FIELD: MESSAGE"; line 0 means the field is missing, so there is no line.
  absl::Status Error(uint32_t line, absl::string_view field, absl::string_view message) const;
  absl::Status Error(const toml::node& node, absl::string_view field,
                     absl::string_view message) const;
  // "expected WANTED, found an integer".
  absl::Status WrongType(const toml::node& node, absl::string_view field,
                         absl::string_view wanted) const;

  // The first key of `table` that is not known, with " (did you mean ...?)" for a
  // misspelt key or one put in the wrong table.
  absl::Status CheckKeys(const toml::table& table, const std::string& table_name) const;

  // A string without NUL bytes.
  absl::Status GetString(const toml::node& node, absl::string_view field, std::string* out) const;
  absl::Status GetStringList(const toml::node& node, absl::string_view field,
                             std::vector<std::string>* out) const;
  absl::Status GetInt(const toml::node& node, absl::string_view field, int64_t min, int64_t max,
                      int64_t* out) const;
  // A duration string ("30s"), or an integer number of seconds, at most `max_hours`.
  // `allow_zero` admits "0" (also "0s", "0.0m").
  absl::Status GetDuration(const toml::node& node, absl::string_view field, bool allow_zero,
                           int64_t max_hours, int64_t* out_ms) const;

  const std::string& origin() const { return origin_; }

 private:
  std::string Suggestion(absl::string_view table, absl::string_view key) const;

  std::string origin_;
  const KnownKeys& known_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_TOML_FIELDS_H_
