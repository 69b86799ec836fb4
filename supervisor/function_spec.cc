// Parses function specs with toml++ (TOML_EXCEPTIONS=0, so a syntax error is a value, not a
// throw) and checks every field, reporting the first problem with its file, line and field.
#include "supervisor/function_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/units.h"
#include "images/package_list.h"
#include "net/allowlist.h"
#include "supervisor/code_policy.h"
#include "supervisor/toml_fields.h"

namespace zygo::supervisor {
namespace {

constexpr int64_t kMaxTimeoutHours = 24;
constexpr int64_t kMaxColdAfterHours = 7 * 24;  // core::ParseDurationMs's own bound
constexpr int64_t kMinMemoryBytes = 4LL << 20;  // below this no Python interpreter starts
constexpr int64_t kMaxPids = 4'194'304;         // the kernel's PID_MAX_LIMIT
constexpr double kMaxCpus = 1024;
constexpr absl::string_view kNameRule =
    "1-63 characters of a-z, 0-9, '_' and '-', starting with a-z or 0-9";

// The keys each table may hold; anything else is an error with a suggestion.
const KnownKeys& SpecKeys() {
  static const auto* keys = new KnownKeys{
      {"",
       {"name", "image", "pull", "runtime", "entry", "code", "system", "requirements", "find_links",
        "pool", "preload", "cold_after", "spares", "limits", "env", "net"}},
      {"limits", {"memory", "pids", "cpu", "timeout"}},
      {"net", {"mode", "allow"}},
  };
  return *keys;
}

bool IsIdentifier(absl::string_view text) {
  if (text.empty() || absl::ascii_isdigit(text[0])) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// A JavaScript identifier, ASCII only: a letter, '_' or '$', then those or digits.
bool IsJsIdentifier(absl::string_view text) {
  auto start = [](char c) { return absl::ascii_isalpha(c) || c == '_' || c == '$'; };
  if (text.empty() || !start(text[0])) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return start(c) || absl::ascii_isdigit(c); });
}

bool IsModuleName(absl::string_view text) {
  for (absl::string_view part : absl::StrSplit(text, '.')) {
    if (!IsIdentifier(part)) return false;
  }
  return true;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// One parse: holds the origin for error messages and fills `spec_` field by field.
class SpecParser : private TomlFields {
 public:
  SpecParser(absl::string_view origin, absl::string_view base_dir, const CodePolicy& code_policy)
      : TomlFields(std::string(origin), SpecKeys()), code_policy_(code_policy) {
    spec_.origin = std::string(origin);
    spec_.base_dir = AbsolutePath(base_dir);
  }

  absl::StatusOr<FunctionSpec> Parse(const toml::table& root) {
    ZYGO_RETURN_IF_ERROR(CheckKeys(root, ""));
    ZYGO_RETURN_IF_ERROR(ParseIdentity(root));
    ZYGO_RETURN_IF_ERROR(ParseCode(root.get("code")));
    ZYGO_RETURN_IF_ERROR(ParseDependencies(root));
    ZYGO_RETURN_IF_ERROR(ParseEntry(root));
    ZYGO_RETURN_IF_ERROR(ParseWarmth(root));
    const toml::node* limits = root.get("limits");
    if (limits != nullptr) ZYGO_RETURN_IF_ERROR(ParseLimits(*limits));
    const toml::node* env = root.get("env");
    if (env != nullptr) ZYGO_RETURN_IF_ERROR(ParseEnv(*env));
    const toml::node* net = root.get("net");
    if (net != nullptr) ZYGO_RETURN_IF_ERROR(ParseNet(*net));
    return std::move(spec_);
  }

 private:
  absl::Status ParseIdentity(const toml::table& root) {
    const toml::node* name = root.get("name");
    if (name == nullptr) return Error(0, "name", "missing; every function needs a name");
    ZYGO_RETURN_IF_ERROR(GetString(*name, "name", &spec_.name));
    if (!ValidateFunctionName(spec_.name).ok()) {
      return Error(*name, "name",
                   absl::StrCat(Quote(spec_.name), " is not a valid name (", kNameRule, ")"));
    }
    if (const toml::node* image = root.get("image")) ZYGO_RETURN_IF_ERROR(ParseImage(*image));
    if (const toml::node* pull = root.get("pull")) {
      std::string name;
      ZYGO_RETURN_IF_ERROR(GetString(*pull, "pull", &name));
      std::optional<runtime::PullPolicy> parsed = runtime::ParsePullPolicy(name);
      if (!parsed.has_value()) {
        return Error(*pull, "pull",
                     absl::StrCat(Quote(name),
                                  " is not a pull policy (use \"missing\", "
                                  "\"always\" or \"never\")"));
      }
      spec_.pull = *parsed;
    }
    if (const toml::node* runtime = root.get("runtime")) {
      std::string name;
      ZYGO_RETURN_IF_ERROR(GetString(*runtime, "runtime", &name));
      std::optional<Runtime> parsed = ParseRuntime(name);
      if (!parsed.has_value()) {
        return Error(
            *runtime, "runtime",
            absl::StrCat(Quote(name), " is not a runtime (use \"python\", \"node\" or \"exec\")"));
      }
      spec_.runtime = *parsed;
    }
    return absl::OkStatus();
  }

  absl::Status ParseImage(const toml::node& node) {
    std::string text;
    ZYGO_RETURN_IF_ERROR(GetString(node, "image", &text));
    absl::StatusOr<runtime::ImageSource> image = runtime::ParseImageSource(text);
    if (!image.ok()) return Error(node, "image", std::string(image.status().message()));
    if (image->kind == runtime::ImageSource::Kind::kDirectory && !IsDirectory(image->directory)) {
      return Error(node, "image",
                   absl::StrCat(Quote(text), ": ", image->directory, " is not a directory"));
    }
    spec_.image = *std::move(image);
    return absl::OkStatus();
  }

  absl::Status ParseCode(const toml::node* node) {
    std::string code = ".";
    if (node != nullptr) ZYGO_RETURN_IF_ERROR(GetString(*node, "code", &code));
    uint32_t line = node != nullptr ? node->source().begin.line : 0;
    if (code.empty()) return Error(line, "code", "is empty (use \".\" for the spec's directory)");
    std::string joined =
        absl::StartsWith(code, "/") ? code : absl::StrCat(spec_.base_dir, "/", code);
    absl::StatusOr<std::string> resolved = ResolveDirectory(joined);
    if (!resolved.ok()) {
      return Error(line, "code", absl::StrCat(Quote(code), ": ", resolved.status().message()));
    }
    // After resolving: a symlink to / is /.
    absl::Status allowed = CheckCodePath(code_policy_, joined, *resolved);
    if (!allowed.ok()) {
      return Error(line, "code", absl::StrCat(Quote(code), ": ", allowed.message()));
    }
    spec_.code = *resolved;
    return absl::OkStatus();
  }

  // system: Debian package names. requirements and find_links: a file and a directory of
  // the code dir, relative to it, that stay in it once symlinks are resolved.
  absl::Status ParseDependencies(const toml::table& root) {
    if (const toml::node* system = root.get("system")) ZYGO_RETURN_IF_ERROR(ParseSystem(*system));
    const toml::node* requirements = root.get("requirements");
    const toml::node* find_links = root.get("find_links");
    if (requirements == nullptr) {
      if (find_links == nullptr) return absl::OkStatus();
      return Error(*find_links, "find_links", "goes with requirements");
    }
    if (spec_.runtime == Runtime::kNode) {
      return Error(*requirements, "requirements",
                   "python only (a pip venv); a node function brings its node_modules in code");
    }
    if (!spec_.image.oci()) {
      return Error(*requirements, "requirements",
                   "needs an OCI image (the venv is built with the image's own pip)");
    }
    ZYGO_ASSIGN_OR_RETURN(spec_.requirements, InCode(*requirements, "requirements", false));
    if (find_links == nullptr) return absl::OkStatus();
    ZYGO_ASSIGN_OR_RETURN(spec_.find_links, InCode(*find_links, "find_links", true));
    return absl::OkStatus();
  }

  absl::Status ParseSystem(const toml::node& node) {
    std::vector<std::string> names;
    ZYGO_RETURN_IF_ERROR(GetStringList(node, "system", &names));
    if (!spec_.image.oci()) {
      return Error(node, "system",
                   "needs an OCI image (the packages are installed with the image's own apt)");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      absl::Status valid = images::ValidatePackageName(names[i]);
      if (!valid.ok()) {
        return Error(node.as_array()->at(i), absl::StrCat("system[", i, "]"), valid.message());
      }
    }
    ZYGO_ASSIGN_OR_RETURN(spec_.system, images::CanonicalPackageList(std::move(names)));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> InCode(const toml::node& node, const char* field, bool directory) {
    std::string relative;
    ZYGO_RETURN_IF_ERROR(GetString(node, field, &relative));
    if (relative.empty() || absl::StartsWith(relative, "/")) {
      return Error(node, field, absl::StrCat(Quote(relative), " must be a path relative to code"));
    }
    const std::string joined = absl::StrCat(spec_.code, "/", relative);
    char resolved[PATH_MAX];
    if (::realpath(joined.c_str(), resolved) == nullptr) {
      return Error(node, field, absl::StrCat(Quote(relative), ": ", strerror(errno)));
    }
    const std::string path = resolved;
    if (!absl::StartsWith(path, absl::StrCat(spec_.code, "/"))) {
      return Error(node, field,
                   absl::StrCat(Quote(relative), " resolves outside code (", path, ")"));
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 ||
        (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
      return Error(node, field,
                   absl::StrCat(Quote(relative), " is not a ", directory ? "directory" : "file"));
    }
    return path;
  }

  absl::Status ParseEntry(const toml::table& root) {
    const toml::node* entry = root.get("entry");
    const toml::node* pool = root.get("pool");
    const toml::node* preload = root.get("preload");
    if (pool != nullptr) {
      if (!pool->is_boolean()) return WrongType(*pool, "pool", "a boolean");
      spec_.pool = pool->as_boolean()->get();
    }
    if (spec_.runtime == Runtime::kExec) {
      if (spec_.pool) return Error(*pool, "pool", "only the python and node runtimes have pools");
      if (preload != nullptr) return Error(*preload, "preload", "only the python runtime preloads");
      if (entry == nullptr) return Error(0, "entry", "missing; an exec function needs a command");
      return ParseExecEntry(*entry);
    }
    if (spec_.runtime == Runtime::kNode && preload != nullptr) {
      return Error(*preload, "preload",
                   "python only; a node handler's own require/import lines load with each "
                   "worker before its request arrives");
    }
    if (preload != nullptr) {
      ZYGO_RETURN_IF_ERROR(GetStringList(*preload, "preload", &spec_.preload));
      for (size_t i = 0; i < spec_.preload.size(); ++i) {
        if (IsModuleName(spec_.preload[i])) continue;
        return Error(preload->as_array()->at(i), absl::StrCat("preload[", i, "]"),
                     absl::StrCat(Quote(spec_.preload[i]), " is not a module name"));
      }
    }
    if (spec_.pool) {
      if (entry == nullptr) return absl::OkStatus();
      return Error(*entry, "entry",
                   "a runtime pool (pool = true) takes no entry: scripts arrive with requests");
    }
    const bool node = spec_.runtime == Runtime::kNode;
    if (entry == nullptr) {
      return Error(0, "entry",
                   absl::StrCat("missing; use entry = \"", node ? "FILE.js" : "FILE.py",
                                ":FUNCTION\" (or pool = true)"));
    }
    return node ? ParseHandlerEntry(*entry, {".js", ".mjs", ".cjs"}, IsJsIdentifier,
                                    "FILE.js:FUNCTION (FILE ending in .js, .mjs or .cjs; e.g. "
                                    "\"handler.js:main\")")
                : ParseHandlerEntry(*entry, {".py"}, IsIdentifier,
                                    "FILE.py:FUNCTION (e.g. \"handler.py:main\")");
  }

  // python and node: FILE:FUNCTION, FILE a file of code ending in one of `extensions`,
  // FUNCTION a name `is_name` accepts; `form` says what was expected.
  absl::Status ParseHandlerEntry(const toml::node& node,
                                 std::initializer_list<absl::string_view> extensions,
                                 bool (*is_name)(absl::string_view), absl::string_view form) {
    ZYGO_RETURN_IF_ERROR(GetString(node, "entry", &spec_.entry));
    const std::string& entry = spec_.entry;
    size_t colon = entry.rfind(':');
    std::string file = colon == std::string::npos ? entry : entry.substr(0, colon);
    std::string function = colon == std::string::npos ? "" : entry.substr(colon + 1);
    const bool named_file = std::any_of(extensions.begin(), extensions.end(), [&](auto ext) {
      return absl::EndsWith(file, ext) && file.size() > ext.size();
    });
    if (!named_file || !is_name(function)) {
      return Error(node, "entry", absl::StrCat(Quote(entry), " is not ", form));
    }
    bool escapes = absl::StartsWith(file, "/");
    for (absl::string_view part : absl::StrSplit(file, '/')) escapes |= part == "..";
    if (escapes) {
      return Error(node, "entry",
                   absl::StrCat(Quote(file), " must be a relative path inside code (", spec_.code,
                                ") without '..'"));
    }
    struct stat st;
    std::string path = absl::StrCat(spec_.code, "/", file);
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Error(node, "entry", absl::StrCat(Quote(file), " is not a file in ", spec_.code));
    }
    spec_.handler_file = file;
    spec_.handler_function = function;
    return absl::OkStatus();
  }

  absl::Status ParseExecEntry(const toml::node& node) {
    if (node.is_string()) {
      std::string command;
      ZYGO_RETURN_IF_ERROR(GetString(node, "entry", &command));
      std::vector<std::string> words =
          absl::StrSplit(command, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
      spec_.command = std::move(words);
    } else if (node.is_array()) {
      ZYGO_RETURN_IF_ERROR(GetStringList(node, "entry", &spec_.command));
    } else {
      return WrongType(node, "entry", "a command string or an array of strings");
    }
    if (spec_.command.empty() || spec_.command[0].empty()) {
      return Error(node, "entry", "the command is empty");
    }
    spec_.entry = absl::StrJoin(spec_.command, " ");
    return absl::OkStatus();
  }

  absl::Status ParseWarmth(const toml::table& root) {
    if (const toml::node* cold_after = root.get("cold_after")) {
      ZYGO_RETURN_IF_ERROR(
          GetDuration(*cold_after, "cold_after", true, kMaxColdAfterHours, &spec_.cold_after_ms));
    }
    if (const toml::node* spares = root.get("spares")) {
      int64_t value;
      ZYGO_RETURN_IF_ERROR(GetInt(*spares, "spares", 1, kMaxSpares, &value));
      spec_.spares = static_cast<int>(value);
    }
    return absl::OkStatus();
  }

  absl::Status ParseLimits(const toml::node& node) {
    if (!node.is_table()) return WrongType(node, "limits", "a table ([limits])");
    const toml::table& limits = *node.as_table();
    ZYGO_RETURN_IF_ERROR(CheckKeys(limits, "limits"));
    if (const toml::node* memory = limits.get("memory")) ZYGO_RETURN_IF_ERROR(ParseMemory(*memory));
    if (const toml::node* pids = limits.get("pids")) {
      ZYGO_RETURN_IF_ERROR(GetInt(*pids, "limits.pids", 1, kMaxPids, &spec_.pids_limit));
    }
    if (const toml::node* cpu = limits.get("cpu")) ZYGO_RETURN_IF_ERROR(ParseCpu(*cpu));
    if (const toml::node* timeout = limits.get("timeout")) {
      ZYGO_RETURN_IF_ERROR(
          GetDuration(*timeout, "limits.timeout", false, kMaxTimeoutHours, &spec_.timeout_ms));
    }
    return absl::OkStatus();
  }

  // Sizes are strings only: a bare `memory = 256` would mean 256 bytes, never what was meant.
  absl::Status ParseMemory(const toml::node& node) {
    constexpr absl::string_view kField = "limits.memory";
    if (!node.is_string()) return WrongType(node, kField, "a size such as \"256M\"");
    const std::string& text = node.as_string()->get();
    absl::StatusOr<int64_t> bytes = core::ParseByteSize(text);
    if (!bytes.ok()) {
      return Error(node, kField, absl::StrCat(Quote(text), " is not a size (use 256M, 1G, ...)"));
    }
    if (*bytes < kMinMemoryBytes) {
      return Error(node, kField, absl::StrCat(Quote(text), " is less than the minimum, 4M"));
    }
    spec_.memory_bytes = *bytes;
    return absl::OkStatus();
  }

  absl::Status ParseCpu(const toml::node& node) {
    constexpr absl::string_view kField = "limits.cpu";
    if (!node.is_number()) return WrongType(node, kField, "a number such as 0.5");
    spec_.cpus = node.is_integer() ? static_cast<double>(node.as_integer()->get())
                                   : node.as_floating_point()->get();
    if (!(spec_.cpus > 0) || !(spec_.cpus <= kMaxCpus)) {
      return Error(node, kField,
                   absl::StrCat(spec_.cpus, " is out of range (above 0, at most ", kMaxCpus, ")"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseEnv(const toml::node& node) {
    if (!node.is_table()) return WrongType(node, "env", "a table ([env])");
    for (auto&& [key, value] : *node.as_table()) {
      std::string name(key.str());
      std::string field = absl::StrCat("env.", name);
      if (!IsIdentifier(name)) {
        return Error(key.source().begin.line, field,
                     "is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
      }
      std::string text;
      ZYGO_RETURN_IF_ERROR(GetString(value, field, &text));
      spec_.env.emplace_back(std::move(name), std::move(text));
    }
    std::sort(spec_.env.begin(), spec_.env.end());
    return absl::OkStatus();
  }

  absl::Status ParseNet(const toml::node& node) {
    if (!node.is_table()) return WrongType(node, "net", "a table ([net])");
    const toml::table& net = *node.as_table();
    ZYGO_RETURN_IF_ERROR(CheckKeys(net, "net"));
    std::string mode = "none";
    const toml::node* mode_node = net.get("mode");
    if (mode_node != nullptr) ZYGO_RETURN_IF_ERROR(GetString(*mode_node, "net.mode", &mode));
    bool known = false;
    for (core::NetMode m : {core::NetMode::kNone, core::NetMode::kEgress, core::NetMode::kFull}) {
      if (mode == core::NetModeName(m)) spec_.net = m, known = true;
    }
    // Refused here, not at the first exec: the supervisor has no opt-in to give a warm
    // function the host's network, so a spec asking for it can never run.
    if (mode == core::NetModeName(core::NetMode::kHost)) {
      return Error(*mode_node, "net.mode",
                   "\"host\" is refused: a warm function never shares the host's network; use "
                   "\"egress\" with net.allow for named hosts, \"full\" for the internet, or "
                   "`zygo run --net host --allow-host-net` for a one-shot command");
    }
    if (!known) {
      return Error(*mode_node, "net.mode",
                   absl::StrCat(Quote(mode), " is not a mode (use none, egress or full)"));
    }
    const toml::node* allow = net.get("allow");
    if (allow != nullptr) {
      ZYGO_RETURN_IF_ERROR(GetStringList(*allow, "net.allow", &spec_.allow));
      for (size_t i = 0; i < spec_.allow.size(); ++i) {
        absl::Status entry = net::ParseAllowEntry(spec_.allow[i]).status();
        if (!entry.ok()) {
          return Error(allow->as_array()->at(i), absl::StrCat("net.allow[", i, "]"),
                       entry.message());
        }
      }
    }
    if (spec_.net != core::NetMode::kEgress && !spec_.allow.empty()) {
      return Error(*allow, "net.allow",
                   absl::StrCat("applies only to mode = \"egress\", not ", Quote(mode)));
    }
    if (spec_.net == core::NetMode::kEgress && spec_.allow.empty()) {
      return Error(*mode_node, "net.mode", "\"egress\" needs at least one net.allow entry");
    }
    return absl::OkStatus();
  }

  const CodePolicy& code_policy_;
  FunctionSpec spec_;
};

}  // namespace

absl::Status ValidateFunctionName(absl::string_view name) {
  auto ok_char = [](char c) { return (c >= 'a' && c <= 'z') || absl::ascii_isdigit(c); };
  bool valid = !name.empty() && name.size() <= 63 && ok_char(name[0]) &&
               std::all_of(name.begin(), name.end(),
                           [&](char c) { return ok_char(c) || c == '_' || c == '-'; });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid function name ", Quote(name), ": use ", kNameRule));
}

absl::StatusOr<FunctionSpec> ParseFunctionSpec(absl::string_view toml_text,
                                               absl::string_view origin, absl::string_view base_dir,
                                               const CodePolicy& code_policy) {
  toml::parse_result parsed =
      toml::parse(std::string_view(toml_text.data(), toml_text.size()), std::string(origin));
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ":", error.source().begin.line,
                     ": invalid TOML: ", std::string(error.description())));
  }
  SpecParser parser(origin, base_dir, code_policy);
  ZYGO_ASSIGN_OR_RETURN(FunctionSpec spec, parser.Parse(parsed.table()));
  spec.source_toml = std::string(toml_text);
  return spec;
}

FunctionInfo ToFunctionInfo(const FunctionSpec& spec) {
  FunctionInfo info;
  info.name = spec.name;
  info.image = spec.image.text;
  info.runtime = spec.runtime;
  info.entry = spec.pool ? "" : spec.entry;
  info.pool = spec.pool;
  info.state = FunctionState::kCold;
  info.requests = 0;
  info.memory_bytes = spec.memory_bytes;
  info.timeout_ms = spec.timeout_ms;
  info.cold_after_ms = spec.cold_after_ms;
  info.spec_path = spec.origin;
  return info;
}

core::Spec ToSandboxSpec(const FunctionSpec& spec) {
  core::Spec sandbox;
  sandbox.root = spec.image.BuiltInRoot();
  sandbox.image_name = spec.image.text;
  if (spec.runtime == Runtime::kExec) sandbox.argv = spec.command;
  for (const auto& [key, value] : spec.env) sandbox.env.push_back(absl::StrCat(key, "=", value));
  sandbox.workdir = "/code";
  // Checked where it resolved at `zygo up`; each warm-up binds it again, and a path that
  // resolves elsewhere now is refused, not followed.
  sandbox.volumes.push_back(core::VolumeSpec{spec.code, "/code", /*read_only=*/true,
                                             /*must_resolve_to_itself=*/true,
                                             "its code directory"});
  sandbox.hostname = "zygo";
  sandbox.memory_bytes = spec.memory_bytes;
  sandbox.pids_limit = spec.pids_limit;
  sandbox.cpus = spec.cpus;
  sandbox.timeout_ms = 0;
  sandbox.net = spec.net;
  sandbox.allow = spec.allow;
  return sandbox;
}

}  // namespace zygo::supervisor
