// The supervisor's state dir: registered functions and runtime-pool scripts, written
// atomically so that a restarted supervisor serves the same functions and scripts.
#ifndef ZYGO_SUPERVISOR_STATE_STORE_H_
#define ZYGO_SUPERVISOR_STATE_STORE_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "supervisor/function_spec.h"

namespace zygo::supervisor {

inline constexpr size_t kMaxScriptBytes = 1 << 20;

// Where the state dir is by default: /var/lib/zygo/supervisor for root, else
// $XDG_STATE_HOME/zygo/supervisor, else ~/.local/state/zygo/supervisor. Reads the
// environment and the password database; FailedPrecondition when no home is known.
absl::StatusOr<std::string> DefaultStateDir();

// The same choice from explicit inputs (empty = unset). XDG_STATE_HOME counts only when
// absolute, as the XDG spec says.
absl::StatusOr<std::string> StateDirFor(bool is_root, absl::string_view xdg_state_home,
                                        absl::string_view home);

// What LoadFunctions found: the functions that parse, and one warning per entry that
// does not (naming the file and why), so one broken file cannot keep the others down.
struct LoadedFunctions {
  std::vector<FunctionSpec> functions;  // sorted by name
  std::vector<std::string> warnings;
};

// Layout: DIR/functions/<name>.toml (the spec's source text), DIR/functions/<name>.origin
// (two lines: origin, base_dir), DIR/scripts/<hex>.py. Every file is written to a temp
// file (".tmp-..."), fsynced and renamed into place, then the directory is fsynced.
// Thread-safe. One supervisor per state dir: Open removes temp files whose writer has died.
class StateStore {
 public:
  // Creates DIR (mode 0700, with missing parents) and its subdirectories, refuses a DIR
  // owned by another user, makes it 0700, removes dead writers' temp files and indexes
  // the scripts on disk (their text is read on first use).
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(std::string dir);

  const std::string& dir() const { return dir_; }

  // Writes the spec's source_toml, origin and base_dir (which must not contain newlines).
  // The .origin file is written first: a crash between the two renames leaves the old
  // spec text with the new origin, which still re-parses.
  absl::Status SaveFunction(const FunctionSpec& spec);
  // NotFound when no such function is stored.
  absl::Status RemoveFunction(absl::string_view name);
  // Re-parses every stored spec (so it reads `code` directories as ParseFunctionSpec does,
  // and a spec whose code `code_policy` now refuses is a warning, not a function).
  // Fails only when the functions directory cannot be listed.
  absl::StatusOr<LoadedFunctions> LoadFunctions(const CodePolicy& code_policy) const;

  // Stores a script and returns "sha256:<hex>". Idempotent. InvalidArgument past
  // kMaxScriptBytes.
  absl::StatusOr<std::string> PutScript(absl::string_view source);
  // InvalidArgument for a malformed digest, NotFound for an unknown one, DataLoss when the
  // file on disk no longer matches its digest. Served from memory after the first read.
  absl::StatusOr<std::string> GetScript(absl::string_view digest);
  size_t ScriptCount() const;

 private:
  explicit StateStore(std::string dir);

  std::string FunctionsDir() const { return dir_ + "/functions"; }
  std::string ScriptsDir() const { return dir_ + "/scripts"; }
  absl::Status IndexScripts();

  const std::string dir_;
  // Serializes function writes, so two saves of one name cannot mix their two files.
  absl::Mutex functions_mu_;
  // Guards only the map: disk I/O happens outside it, so a pool request never waits on an
  // fsync.
  mutable absl::Mutex mu_;
  // digest -> source; nullptr while the script is known to be on disk but not yet read.
  std::map<std::string, std::shared_ptr<const std::string>> scripts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_STATE_STORE_H_
