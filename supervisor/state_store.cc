// The supervisor's state dir: specs and scripts as plain files, each replaced atomically
// (temp file, fsync, rename, fsync of the directory).
#include "supervisor/state_store.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/process_start_time.h"
#include "core/base/unique_fd.h"
#include "images/digest.h"

namespace zygo::supervisor {
namespace {

namespace fs = std::filesystem;
using base::UniqueFd;
using base::sys::ProcessStartTime;

constexpr absl::string_view kTempPrefix = ".tmp-";

// TODO(supervisor issue 5): fsync, rename, unlink and chmod belong in core/base/sys (as
// images/store.cc notes too); they follow its rules meanwhile.
// ".tmp-<pid>-<start>-<random>-<final name>": Open can tell a dead writer's leftover from
// a live writer's work in progress.
std::string TempName(absl::string_view final_name) {
  uint64_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != sizeof(random)) {
    random = static_cast<uint64_t>(clock()) ^ reinterpret_cast<uintptr_t>(&random);
  }
  pid_t pid = getpid();
  return absl::StrFormat("%s%d-%s-%016x-%s", kTempPrefix, pid, ProcessStartTime(pid), random,
                         final_name);
}

bool WriterIsAlive(absl::string_view temp_name) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(temp_name.substr(kTempPrefix.size()), absl::MaxSplits('-', 3));
  pid_t pid = 0;
  if (parts.size() < 4 || !absl::SimpleAtoi(parts[0], &pid) || pid <= 0) return false;
  return parts[1] != "0" && ProcessStartTime(pid) == parts[1];
}

absl::Status FsyncPath(const std::string& path) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd fd, base::sys::OpenReadOnly(path));
  if (base::RetryOnEintr([&] { return ::fsync(fd.get()); }) == 0) return absl::OkStatus();
  return base::LastErrnoStatus([&] { return absl::StrCat("fsync(", path, ")"); });
}

// Writes `bytes` to dir/name through a temp file, so a reader (or a restart after a crash)
// sees the old file or the new one, never a part. The caller fsyncs `dir` afterwards.
absl::Status WriteAtomically(const std::string& dir, absl::string_view name,
                             absl::string_view bytes) {
  base::sys::AtomicWriteOptions options;
  options.mode = 0600;
  // A temp name that says whose it is, so RemoveDeadTemps knows a dead writer's.
  options.temp_path = absl::StrCat(dir, "/", TempName(name));
  return base::sys::WriteFileAtomically(absl::StrCat(dir, "/", name), bytes, options);
}

// mkdir -p with `mode` for every directory it makes.
absl::Status MakeDirectories(const std::string& path, mode_t mode) {
  std::string prefix;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    prefix = absl::StrCat(prefix.empty() && !absl::StartsWith(path, "/") ? "" : prefix + "/", part);
    absl::Status made = base::sys::MakeDirectory(prefix, mode);
    if (!made.ok() && base::sys::ErrnoOf(made) != EEXIST) return made;
  }
  return absl::OkStatus();
}

// The state dir holds what the supervisor will run: only its owner may touch it.
absl::Status ClaimDirectory(const std::string& path) {
  ZYGO_RETURN_IF_ERROR(MakeDirectories(path, 0700));
  ZYGO_ASSIGN_OR_RETURN(struct stat st, base::sys::Stat(path));
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  if (st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat("state dir ", path, " belongs to uid ",
                                                    st.st_uid, ", not to uid ", geteuid()));
  }
  if ((st.st_mode & 07777) != 0700 && ::chmod(path.c_str(), 0700) != 0) {
    return base::LastErrnoStatus([&] { return absl::StrCat("chmod(", path, ", 0700)"); });
  }
  return absl::OkStatus();
}

// The names in `dir`; an error only when it cannot be listed at all.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RemoveDeadTemps(const std::string& dir) {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  for (const std::string& name : names) {
    if (!absl::StartsWith(name, kTempPrefix) || WriterIsAlive(name)) continue;
    std::string path = absl::StrCat(dir, "/", name);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return base::LastErrnoStatus([&] { return absl::StrCat("unlink(", path, ")"); });
    }
  }
  return absl::OkStatus();
}

// One stored function: its spec re-parsed with the origin and base_dir it was saved with.
absl::StatusOr<FunctionSpec> LoadFunction(const std::string& dir, const std::string& name,
                                          const CodePolicy& code_policy) {
  ZYGO_RETURN_IF_ERROR(ValidateFunctionName(name));
  ZYGO_ASSIGN_OR_RETURN(std::string text,
                        base::sys::ReadFile(absl::StrCat(dir, "/", name, ".toml")));
  ZYGO_ASSIGN_OR_RETURN(std::string origin_file,
                        base::sys::ReadFile(absl::StrCat(dir, "/", name, ".origin")));
  std::vector<std::string> lines = absl::StrSplit(origin_file, '\n');
  if (lines.size() != 3 || !lines[2].empty()) {
    return absl::DataLossError(
        absl::StrCat(name, ".origin: expected two lines, origin and base_dir"));
  }
  ZYGO_ASSIGN_OR_RETURN(FunctionSpec spec,
                        ParseFunctionSpec(text, lines[0], lines[1], code_policy));
  if (spec.name != name) {
    return absl::DataLossError(
        absl::StrCat(name, ".toml names the function \"", spec.name, "\", not \"", name, "\""));
  }
  return spec;
}

}  // namespace

absl::StatusOr<std::string> StateDirFor(bool is_root, absl::string_view xdg_state_home,
                                        absl::string_view home) {
  if (is_root) return std::string("/var/lib/zygo/supervisor");
  if (absl::StartsWith(xdg_state_home, "/"))
    return absl::StrCat(xdg_state_home, "/zygo/supervisor");
  if (absl::StartsWith(home, "/")) return absl::StrCat(home, "/.local/state/zygo/supervisor");
  return absl::FailedPreconditionError(
      "no state dir: set XDG_STATE_HOME or HOME (or pass a state dir explicitly)");
}

absl::StatusOr<std::string> DefaultStateDir() {
  const char* xdg = getenv("XDG_STATE_HOME");
  const char* home = getenv("HOME");
  std::string home_dir = home != nullptr ? home : "";
  if (home_dir.empty()) {
    struct passwd entry;
    struct passwd* found = nullptr;
    char buffer[4096];
    if (getpwuid_r(geteuid(), &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr) {
      home_dir = found->pw_dir;
    }
  }
  return StateDirFor(geteuid() == 0, xdg != nullptr ? xdg : "", home_dir);
}

StateStore::StateStore(std::string dir) : dir_(std::move(dir)) {}

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(std::string dir) {
  if (dir.empty()) return absl::InvalidArgumentError("the state dir path is empty");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::unique_ptr<StateStore> store(new StateStore(std::move(dir)));
  ZYGO_RETURN_IF_ERROR(ClaimDirectory(store->dir_));
  for (const std::string& sub : {store->FunctionsDir(), store->ScriptsDir()}) {
    ZYGO_RETURN_IF_ERROR(ClaimDirectory(sub));
    ZYGO_RETURN_IF_ERROR(RemoveDeadTemps(sub));
  }
  ZYGO_RETURN_IF_ERROR(store->IndexScripts());
  return store;
}

absl::Status StateStore::IndexScripts() {
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(ScriptsDir()));
  absl::MutexLock lock(&mu_);
  for (const std::string& name : names) {
    if (!absl::EndsWith(name, ".py")) continue;
    std::string digest = absl::StrCat("sha256:", name.substr(0, name.size() - 3));
    if (images::ValidateDigest(digest).ok()) scripts_.emplace(digest, nullptr);
  }
  return absl::OkStatus();
}

absl::Status StateStore::SaveFunction(const FunctionSpec& spec) {
  ZYGO_RETURN_IF_ERROR(ValidateFunctionName(spec.name));
  for (const std::string* line : {&spec.origin, &spec.base_dir}) {
    if (line->empty() || line->find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "function ", spec.name, ": origin and base_dir must be one non-empty line each"));
    }
  }
  absl::MutexLock lock(&functions_mu_);
  std::string dir = FunctionsDir();
  ZYGO_RETURN_IF_ERROR(WriteAtomically(dir, spec.name + ".origin",
                                       absl::StrCat(spec.origin, "\n", spec.base_dir, "\n")));
  ZYGO_RETURN_IF_ERROR(WriteAtomically(dir, spec.name + ".toml", spec.source_toml));
  return FsyncPath(dir);
}

absl::Status StateStore::RemoveFunction(absl::string_view name) {
  ZYGO_RETURN_IF_ERROR(ValidateFunctionName(name));
  absl::MutexLock lock(&functions_mu_);
  std::string dir = FunctionsDir();
  // The .toml goes first: a crash after it leaves only an .origin, which loads as nothing.
  std::string spec_path = absl::StrCat(dir, "/", name, ".toml");
  if (::unlink(spec_path.c_str()) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no function named ", name));
    return base::LastErrnoStatus([&] { return absl::StrCat("unlink(", spec_path, ")"); });
  }
  std::string origin_path = absl::StrCat(dir, "/", name, ".origin");
  if (::unlink(origin_path.c_str()) != 0 && errno != ENOENT) {
    return base::LastErrnoStatus([&] { return absl::StrCat("unlink(", origin_path, ")"); });
  }
  return FsyncPath(dir);
}

absl::StatusOr<LoadedFunctions> StateStore::LoadFunctions(const CodePolicy& code_policy) const {
  std::string dir = FunctionsDir();
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  LoadedFunctions loaded;
  for (const std::string& file : names) {
    if (absl::StartsWith(file, ".") || !absl::EndsWith(file, ".toml")) continue;
    absl::StatusOr<FunctionSpec> spec =
        LoadFunction(dir, file.substr(0, file.size() - 5), code_policy);
    if (spec.ok()) {
      loaded.functions.push_back(*std::move(spec));
    } else {
      loaded.warnings.push_back(
          absl::StrCat(dir, "/", file, ": not loaded: ", spec.status().message()));
    }
  }
  return loaded;
}

absl::StatusOr<std::string> StateStore::PutScript(absl::string_view source) {
  if (source.size() > kMaxScriptBytes) {
    return absl::InvalidArgumentError(absl::StrCat("script of ", source.size(),
                                                   " bytes is over the limit of ", kMaxScriptBytes,
                                                   " bytes (1 MiB)"));
  }
  std::string digest = images::Sha256Digest(source);
  auto text = std::make_shared<const std::string>(source);
  {
    absl::MutexLock lock(&mu_);
    auto it = scripts_.find(digest);
    if (it != scripts_.end()) {
      // On disk already; the caller just handed over its text, so no read is ever needed.
      if (it->second == nullptr) it->second = std::move(text);
      return digest;
    }
  }
  // Two racing puts of one script write the same bytes: whichever rename lands last wins
  // and both are right.
  std::string dir = ScriptsDir();
  ZYGO_RETURN_IF_ERROR(WriteAtomically(dir, images::DigestHex(digest) + ".py", source));
  ZYGO_RETURN_IF_ERROR(FsyncPath(dir));
  absl::MutexLock lock(&mu_);
  scripts_[digest] = std::move(text);
  return digest;
}

absl::StatusOr<std::string> StateStore::GetScript(absl::string_view digest) {
  ZYGO_RETURN_IF_ERROR(images::ValidateDigest(digest));
  std::string key(digest);
  {
    absl::MutexLock lock(&mu_);
    auto it = scripts_.find(key);
    if (it != scripts_.end() && it->second != nullptr) return *it->second;
  }
  // Not read yet (or put by an earlier supervisor, or never): the disk decides.
  std::string path = absl::StrCat(ScriptsDir(), "/", images::DigestHex(digest), ".py");
  absl::StatusOr<std::string> source = base::sys::ReadFile(path);
  if (absl::IsNotFound(source.status())) {
    return absl::NotFoundError(absl::StrCat("no script ", digest, " (PutScript it first)"));
  }
  if (!source.ok()) return source.status();
  if (images::Sha256Digest(*source) != key) {
    return absl::DataLossError(absl::StrCat(path, " does not match its digest"));
  }
  absl::MutexLock lock(&mu_);
  scripts_[key] = std::make_shared<const std::string>(*source);
  return source;
}

size_t StateStore::ScriptCount() const {
  absl::MutexLock lock(&mu_);
  return scripts_.size();
}

}  // namespace zygo::supervisor
