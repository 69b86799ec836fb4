#include "bench/common/flag_set.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zygo::bench {

FlagSet& FlagSet::Switch(const std::string& name, bool* target) {
  switches_[name] = target;
  return *this;
}

FlagSet& FlagSet::Count(const std::string& name, int* target, int min, int max) {
  return Count(
      name, [target](int value) { *target = value; }, min, max);
}

FlagSet& FlagSet::Count(const std::string& name, std::function<void(int)> store, int min, int max) {
  return Custom(name, [name, store = std::move(store), min, max](const std::string& text) {
    int value = 0;
    if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " '", text, "': expected a whole number from ", min, " to ", max));
    }
    store(value);
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Number(const std::string& name, double* target, double max) {
  return Custom(name, [name, target, max](const std::string& text) {
    double value = 0;
    if (!absl::SimpleAtod(text, &value) || !(value > 0) || value > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " '", text, "': expected a number above 0, at most ", max));
    }
    *target = value;
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Text(const std::string& name, std::string* target, bool allow_empty) {
  return Custom(name, [name, target, allow_empty](const std::string& text) {
    if (text.empty() && !allow_empty) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs a non-empty value"));
    }
    *target = text;
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Custom(const std::string& name,
                         std::function<absl::Status(const std::string&)> apply) {
  values_[name] = std::move(apply);
  return *this;
}

absl::Status FlagSet::Parse(int argc, char** argv, bool* help) {
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      *help = true;
      continue;
    }
    if (auto found = switches_.find(arg); found != switches_.end()) {
      *found->second = true;
      given_.insert(arg);
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); absl::StartsWith(arg, "--") && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto apply = values_.find(name);
    if (apply == values_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag or argument '", arg,
                                                     "' (see zygo bench ", bench_, " --help)"));
    }
    if (!has_value) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      value = argv[++i];
    }
    if (absl::Status applied = apply->second(value); !applied.ok()) return applied;
    given_.insert(name);
  }
  return absl::OkStatus();
}

}  // namespace zygo::bench
