// Where a function's `code` may come from. The code directory is bound read-only at /code
// in the function's sandbox, so whatever it holds is readable by the function's (untrusted)
// code: never the host's root, a system directory or the supervisor's own state and
// sockets; with --code-root, only what lies inside those roots.
#ifndef ZYGO_SUPERVISOR_CODE_POLICY_H_
#define ZYGO_SUPERVISOR_CODE_POLICY_H_

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::supervisor {

// A directory of the supervisor's own that no function may see: code may neither be it nor
// contain it, and with `inside_too` not lie inside it either.
struct PrivateDir {
  std::string path;  // absolute, symlinks resolved (ResolvePolicyPath)
  std::string what;  // for errors: "the supervisor's state directory, which holds ..."
  // The state dir: true (its functions/ holds every spec). A socket dir: false, since a
  // directory below it shows nothing of the sockets beside it.
  bool inside_too = true;
};

// An account's home directory, as the password database writes it.
struct Home {
  std::string owner;  // the account's name, for errors
  std::string dir;    // absolute; symlinks are resolved when it is compared
};

// The home of the account `uid` (getpwuid_r), or nullopt when the password database has no
// such account or gives it no absolute home.
std::optional<Home> PasswdHomeOf(uid_t uid);

// Every path here is absolute with symlinks resolved (ResolvePolicyPath).
struct CodePolicy {
  // When not empty, code must be one of these or lie inside one (`zygo serve --code-root`).
  std::vector<std::string> roots;
  // The supervisor's state dir (every function's spec and [env]) and its socket dirs (a
  // function that sees a socket can connect to it, read-only bind or not, and call the API).
  std::vector<PrivateDir> private_dirs;
  // The exception: code the supervisor wrote itself (the state dir's demo/, which holds
  // only the demo handler) may lie inside a private dir and outside the roots.
  std::vector<std::string> own_code_dirs;
  // Where the owner of a code directory keeps its keys: the one home CheckCodeDir refuses.
  std::function<std::optional<Home>(uid_t)> home_of = PasswdHomeOf;
};

// InvalidArgument saying why `code` (absolute, symlinks resolved) may not be a function's
// code, the message starting with the path ("/etc is a system directory ..."); OK when it
// may be. Always refused, roots or not: `/`; a system directory (/bin, /boot, /dev, /etc,
// /home, /lib*, /media, /mnt, /opt, /proc, /root, /run, /sbin, /snap, /srv, /sys, /tmp,
// /usr and its top-level directories, /var and its top-level directories), which also
// covers every directory containing one; anything inside /boot, /dev, /etc, /proc, /run,
// /sys, /var/log or /var/run; the home directory of the account that owns `code`
// (policy.home_of of its owner's uid). Reads the filesystem (stat) and, by default, the
// password database.
absl::Status CheckCodeDir(const CodePolicy& policy, const std::string& code);

// CheckCodeDir of `resolved`, what the absolute path `written` resolves to; when that went
// through a symlink the message starts "resolves to RESOLVED; ".
absl::Status CheckCodePath(const CodePolicy& policy, const std::string& written,
                           const std::string& resolved);

// `path` made absolute against the working directory (the working directory itself for
// "" and "."); nothing is resolved. Reads only the working directory.
std::string AbsolutePath(absl::string_view path);

// AbsolutePath(`path`) with symlinks resolved; a path that does not exist yet (a socket
// dir made later) is resolved as far as it exists.
std::string ResolvePolicyPath(absl::string_view path);

// What the absolute `path` resolves to (symlinks, "." and ".."), when that is an existing
// directory: NotFound "PATH does not exist", FailedPrecondition "RESOLVED is not a
// directory" otherwise.
absl::StatusOr<std::string> ResolveDirectory(const std::string& path);

// A `--code-root DIR` value: an absolute path to an existing directory, resolved.
// InvalidArgument naming the value otherwise.
absl::StatusOr<std::string> ResolveCodeRoot(absl::string_view dir);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_CODE_POLICY_H_
