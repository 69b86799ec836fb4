// The checks behind CodePolicy: fixed lists of the host's system directories, the
// supervisor's own directories, the owner's home, and the operator's roots.
#include "supervisor/code_policy.h"

#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/sys/fs.h"

namespace zygo::supervisor {
namespace {

// Directories the host's own files live in, and each of their ancestors (every entry's
// parent is listed too, so being refused covers "contains one"). Inside them is allowed
// (a project in /srv/app or /home/me/fn); the directory itself, the place of many other
// things, is not.
constexpr const char* kSystemDirs[] = {
    "/",          "/bin",       "/boot",        "/dev",         "/etc",       "/home",
    "/media",     "/mnt",       "/opt",         "/proc",        "/root",      "/run",
    "/sbin",      "/snap",      "/srv",         "/sys",         "/tmp",       "/usr",
    "/usr/bin",   "/usr/games", "/usr/include", "/usr/libexec", "/usr/local", "/usr/sbin",
    "/usr/share", "/usr/src",   "/var",         "/var/backups", "/var/cache", "/var/lib",
    "/var/local", "/var/log",   "/var/mail",    "/var/opt",     "/var/run",   "/var/spool",
    "/var/tmp",
};

// Trees nothing of which may be code: secrets, devices, the kernel's views, live state.
struct Tree {
  const char* dir;
  const char* what;
};
constexpr Tree kRefusedTrees[] = {
    {"/boot", "the kernel and boot files"},
    {"/dev", "device files"},
    {"/etc", "the host's configuration and secrets"},
    {"/proc", "the kernel's view of every process"},
    {"/run", "runtime state and sockets"},
    {"/sys", "the kernel's devices and settings"},
    {"/var/log", "the host's logs"},
    {"/var/run", "runtime state and sockets"},
};

// `path` is `dir` or lies below it (whole components: /srv/app2 is not inside /srv/app).
bool IsInside(absl::string_view path, absl::string_view dir) {
  if (dir == "/") return absl::StartsWith(path, "/");
  return path == dir ||
         (absl::StartsWith(path, dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

// /lib, /lib64, /libx32, /usr/lib, /usr/lib32, ...: the libraries, under any name.
bool IsLibraryDir(absl::string_view path) {
  for (absl::string_view parent : {"/", "/usr/"}) {
    if (!absl::StartsWith(path, parent)) continue;
    absl::string_view rest = path.substr(parent.size());
    if (absl::StartsWith(rest, "lib") && !absl::StrContains(rest, '/')) return true;
  }
  return false;
}

absl::Status Refused(const std::string& code, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(code, " ", why));
}

absl::Status CheckSystemDirs(const std::string& code) {
  if (code == "/") {
    return Refused(code,
                   "is the host's root directory; code must be a directory of its own "
                   "(the function's project folder)");
  }
  bool system = IsLibraryDir(code);
  for (const char* dir : kSystemDirs) system = system || IsInside(dir, code);
  if (system) {
    return Refused(code,
                   "is a system directory; code must be a directory of its own "
                   "(the function's project folder), not one the host's files live in");
  }
  for (const Tree& tree : kRefusedTrees) {
    if (IsInside(code, tree.dir)) {
      return Refused(code, absl::StrCat("lies inside ", tree.dir, " (", tree.what, ")"));
    }
  }
  return absl::OkStatus();
}

// A home directory holds its owner's keys and tokens (~/.ssh, ~/.aws); a folder inside it
// is fine. The owner of `code` is asked, so no account list is walked.
absl::Status CheckOwnersHome(const CodePolicy& policy, const std::string& code) {
  absl::StatusOr<struct stat> st = base::sys::Stat(code);
  if (!st.ok() || !policy.home_of) return absl::OkStatus();
  std::optional<Home> home = policy.home_of(st->st_uid);
  if (!home.has_value() || ResolvePolicyPath(home->dir) != code) return absl::OkStatus();
  return Refused(
      code, absl::StrCat("is the home directory of ", home->owner, "; use a folder inside it"));
}

absl::Status CheckPrivateDirs(const CodePolicy& policy, const std::string& code) {
  for (const PrivateDir& dir : policy.private_dirs) {
    if (code == dir.path) return Refused(code, absl::StrCat("is ", dir.what));
    if (dir.inside_too && IsInside(code, dir.path)) {
      return Refused(code, absl::StrCat("lies inside ", dir.what, " (", dir.path, ")"));
    }
    if (IsInside(dir.path, code)) {
      return Refused(code, absl::StrCat("contains ", dir.what, " (", dir.path, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRoots(const CodePolicy& policy, const std::string& code) {
  if (policy.roots.empty()) return absl::OkStatus();
  for (const std::string& root : policy.roots) {
    if (IsInside(code, root)) return absl::OkStatus();
  }
  return Refused(code, absl::StrCat("is outside the directories code may come from (zygo serve "
                                    "--code-root ",
                                    absl::StrJoin(policy.roots, ", --code-root "), ")"));
}

// `path` with "." and ".." folded and no trailing '/', symlinks left as they are.
std::string LexicalPath(const std::string& path) {
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

}  // namespace

std::optional<Home> PasswdHomeOf(uid_t uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_dir == nullptr || found->pw_dir[0] != '/') {
    return std::nullopt;
  }
  return Home{found->pw_name, found->pw_dir};
}

absl::Status CheckCodePath(const CodePolicy& policy, const std::string& written,
                           const std::string& resolved) {
  absl::Status allowed = CheckCodeDir(policy, resolved);
  if (allowed.ok() || LexicalPath(written) == resolved) return allowed;
  return absl::InvalidArgumentError(
      absl::StrCat("resolves to ", resolved, "; ", allowed.message()));
}

absl::Status CheckCodeDir(const CodePolicy& policy, const std::string& code) {
  if (code.empty() || code[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("\"", code, "\" is not an absolute path"));
  }
  absl::Status system = CheckSystemDirs(code);
  if (!system.ok()) return system;
  absl::Status home = CheckOwnersHome(policy, code);
  if (!home.ok()) return home;
  for (const std::string& own : policy.own_code_dirs) {
    if (IsInside(code, own)) return absl::OkStatus();
  }
  absl::Status private_dirs = CheckPrivateDirs(policy, code);
  if (!private_dirs.ok()) return private_dirs;
  return CheckRoots(policy, code);
}

std::string AbsolutePath(absl::string_view path) {
  if (absl::StartsWith(path, "/")) return std::string(path);
  char cwd[PATH_MAX];
  std::string dir = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "/";
  if (path.empty() || path == ".") return dir;
  return absl::StrCat(dir == "/" ? "" : dir, "/", path);
}

std::string ResolvePolicyPath(absl::string_view path) {
  std::string absolute = AbsolutePath(path);
  while (absolute.size() > 1 && absl::EndsWith(absolute, "/")) absolute.pop_back();
  char resolved[PATH_MAX];
  if (::realpath(absolute.c_str(), resolved) != nullptr) return resolved;
  size_t slash = absolute.rfind('/');
  if (slash == std::string::npos || absolute == "/") return absolute;
  std::string parent = ResolvePolicyPath(slash == 0 ? "/" : absolute.substr(0, slash));
  return absl::StrCat(parent == "/" ? "" : parent, absolute.substr(slash));
}

absl::StatusOr<std::string> ResolveDirectory(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  }
  absl::StatusOr<struct stat> st = base::sys::Stat(resolved);
  if (!st.ok() || !S_ISDIR(st->st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(resolved, " is not a directory"));
  }
  return std::string(resolved);
}

absl::StatusOr<std::string> ResolveCodeRoot(absl::string_view dir) {
  if (!absl::StartsWith(dir, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--code-root \"", dir, "\": needs an absolute path"));
  }
  absl::StatusOr<std::string> resolved = ResolveDirectory(std::string(dir));
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--code-root \"", dir,
                                                   "\": not an existing directory (",
                                                   resolved.status().message(), ")"));
  }
  return resolved;
}

}  // namespace zygo::supervisor
