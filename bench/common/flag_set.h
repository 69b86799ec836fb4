// The one flag parser every `zygo bench` uses: a bench declares its flags and where each
// value goes, and Parse takes "--name value" or "--name=value" in any order. Errors name
// the flag and end with "(see zygo bench NAME --help)" for an unknown one. Pure; no I/O.
#ifndef ZYGO_BENCH_COMMON_FLAG_SET_H_
#define ZYGO_BENCH_COMMON_FLAG_SET_H_

#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zygo::bench {

class FlagSet {
 public:
  explicit FlagSet(std::string bench) : bench_(std::move(bench)) {}

  // A flag without a value ("--no-peer").
  FlagSet& Switch(const std::string& name, bool* target);
  // A whole number from `min` to `max` ("--runs 200"), stored in `target` or given to
  // `store` (a flag that sets several fields).
  FlagSet& Count(const std::string& name, int* target, int min = 1, int max = 1'000'000);
  FlagSet& Count(const std::string& name, std::function<void(int)> store, int min = 1,
                 int max = 1'000'000);
  // A number above 0, at most `max` ("--rate 250").
  FlagSet& Number(const std::string& name, double* target, double max);
  // Text; `allow_empty` false refuses "--zygo=" ("needs a non-empty value").
  FlagSet& Text(const std::string& name, std::string* target, bool allow_empty = false);
  // Anything else: `apply` checks and stores the value.
  FlagSet& Custom(const std::string& name, std::function<absl::Status(const std::string&)> apply);

  // Parses `argv` (after the bench's name). -h and --help set `*help` and are never errors.
  absl::Status Parse(int argc, char** argv, bool* help);
  // Whether `name` was on the command line (so a --quick default leaves it alone).
  bool Given(const std::string& name) const { return given_.count(name) > 0; }

 private:
  using Apply = std::function<absl::Status(const std::string& value)>;

  std::string bench_;
  std::map<std::string, bool*> switches_;
  std::map<std::string, Apply> values_;
  std::set<std::string> given_;
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_FLAG_SET_H_
