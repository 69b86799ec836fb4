#include "core/units.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zygo::core {
namespace {

// Splits "123abc" into its leading digits and the rest.
void SplitNumber(absl::string_view text, absl::string_view* digits, absl::string_view* suffix) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  *digits = text.substr(0, i);
  *suffix = text.substr(i);
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view digits, suffix;
  SplitNumber(text, &digits, &suffix);
  uint64_t value = 0;
  if (digits.empty() || !absl::SimpleAtoi(digits, &value) || value == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size '", text, "': expected a positive number such as 256m"));
  }
  std::string unit = absl::AsciiStrToLower(suffix);
  if (unit.size() == 2 && unit[1] == 'b') unit.pop_back();  // "mb" == "m"
  int shift;
  if (unit.empty() || unit == "b") {
    shift = 0;
  } else if (unit == "k") {
    shift = 10;
  } else if (unit == "m") {
    shift = 20;
  } else if (unit == "g") {
    shift = 30;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size '", text, "': unknown unit '", suffix, "' (use b, k, m or g)"));
  }
  if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid size '", text, "': too large"));
  }
  return static_cast<int64_t>(value << shift);
}

absl::StatusOr<int64_t> ParseDurationMs(absl::string_view text) {
  absl::string_view digits, suffix;
  SplitNumber(text, &digits, &suffix);
  double value = 0;
  if (digits.empty() || !absl::SimpleAtod(digits, &value) || !(value > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid duration '", text, "': expected a positive number such as 30s"));
  }
  double scale;
  if (suffix.empty() || suffix == "s") {
    scale = 1000;
  } else if (suffix == "ms") {
    scale = 1;
  } else if (suffix == "m") {
    scale = 60'000;
  } else if (suffix == "h") {
    scale = 3'600'000;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration '", text, "': unknown unit '",
                                                   suffix, "' (use ms, s, m or h)"));
  }
  double ms = value * scale;
  if (ms < 1 || ms > 7 * 24 * 3'600'000.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid duration '", text, "': must be between 1ms and 7 days"));
  }
  return static_cast<int64_t>(std::llround(ms));
}

absl::StatusOr<double> ParsePositiveDecimal(absl::string_view text) {
  double value = 0;
  bool digits_only = !text.empty();
  for (char c : text) digits_only &= (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
  if (!digits_only || !absl::SimpleAtod(text, &value) || !(value > 0) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid number '", text, "': expected a positive decimal such as 0.5"));
  }
  return value;
}

}  // namespace zygo::core
