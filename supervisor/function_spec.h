// A function spec: the TOML file `zygo up` registers (docs/function-spec.md), parsed and
// checked into a plain struct, and turned into what `zygo ls` shows and what the sandbox runs.
#ifndef ZYGO_SUPERVISOR_FUNCTION_SPEC_H_
#define ZYGO_SUPERVISOR_FUNCTION_SPEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/spec.h"
#include "runtime/image_pull.h"
#include "runtime/image_source.h"
#include "supervisor/code_policy.h"
#include "supervisor/service.h"

namespace zygo::supervisor {

// The most spares a spec may ask for.
inline constexpr int kMaxSpares = 64;

// Every field after parsing: defaults filled in, sizes in bytes, durations in milliseconds.
struct FunctionSpec {
  std::string name;
  runtime::ImageSource image = runtime::ImageSource::Host();
  runtime::PullPolicy pull = runtime::PullPolicy::kMissing;  // an OCI image, at warm-up
  Runtime runtime = Runtime::kPython;
  // python: "FILE.py:FUNCTION", node: "FILE.js:FUNCTION" (or .mjs, .cjs), as written (""
  // for a pool); exec: the command as written, an array joined with single spaces.
  std::string entry;
  std::string handler_file;          // python, node: FILE, relative to `code`
  std::string handler_function;      // python, node: FUNCTION
  std::vector<std::string> command;  // exec: argv
  std::string code;                  // absolute, symlinks resolved; mounted read-only at /code
  // An OCI image's Debian packages in a system layer (images/system_layer.h), as `zygo
  // run --system`: names only, sorted, each once; empty when not given.
  std::vector<std::string> system;
  // An OCI image's venv (images/venv_cache.h), as `zygo run --requirements --find-links`:
  // files of `code`, absolute and resolved; empty when not given.
  std::string requirements;
  std::string find_links;
  bool pool = false;
  std::vector<std::string> preload;     // python only: modules imported before forking
  int64_t cold_after_ms = 10 * 60'000;  // 0 = never dropped
  int spares = 2;

  int64_t memory_bytes = 256LL << 20;
  int64_t pids_limit = 64;
  double cpus = 1.0;
  int64_t timeout_ms = 30'000;

  std::vector<std::pair<std::string, std::string>> env;  // sorted by key
  core::NetMode net = core::NetMode::kNone;
  std::vector<std::string> allow;  // "HOST:PORT", only with kEgress

  std::string source_toml;  // the text it was parsed from, kept to re-register after restart
  std::string origin;       // the file name errors use
  std::string base_dir;     // what relative paths were resolved against
};

// Parses and checks a spec. `origin` names the text in errors; `base_dir` resolves a
// relative `code` (it must exist, so this reads the filesystem), which `code_policy` must
// then allow once resolved. Errors are InvalidArgument and read
// "ORIGIN:LINE: FIELD: what is wrong", e.g.
//   hello.toml:4: limits.memory: "12Q" is not a size (use 256M, 1G, ...)
//   hello.toml:3: code: "rootfs": resolves to /; / is the host's root directory; ...
// A missing required field has no line: "hello.toml: name: ...".
absl::StatusOr<FunctionSpec> ParseFunctionSpec(absl::string_view toml_text,
                                               absl::string_view origin, absl::string_view base_dir,
                                               const CodePolicy& code_policy);

// Checks a function name: [a-z0-9][a-z0-9_-]{0,62}. Names become file names in the state
// dir, so anything that reaches the disk goes through this.
absl::Status ValidateFunctionName(absl::string_view name);

// The static part of what `zygo ls` shows: state "cold", no requests yet.
FunctionInfo ToFunctionInfo(const FunctionSpec& spec);

// The sandbox every process of the function runs in. timeout_ms is 0: the caller sets it
// (a zygote lives longer than one request). An OCI `image` is left for the caller to put
// in through runtime::UseImage (root stays host); allow_host_net stays false (a
// spec never has net = "host": ParseFunctionSpec refuses it). argv is the exec command,
// empty for python and node (the caller starts their agent).
core::Spec ToSandboxSpec(const FunctionSpec& spec);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_FUNCTION_SPEC_H_
