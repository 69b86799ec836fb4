// A program on an image's PATH, resolved one path component at a time inside the image's
// root, as the sandbox's own lookup would find it.
#include "supervisor/image_program.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/openat2.h"
#include "core/base/unique_fd.h"
#include "core/plan.h"

namespace zygo::supervisor {
namespace {

// The kernel's own bound on links followed in one lookup (path_resolution(7)).
constexpr int kMaxLinks = 40;

// What the host image shows of the host (core/mount_plan.cc: kHostTopLevel, and the one
// directory of kHostEtc that programs' links go through).
constexpr const char* kHostVisible[] = {"/usr",   "/bin",   "/sbin",   "/lib",
                                        "/lib32", "/lib64", "/libx32", "/etc/alternatives"};

// `path` exists in the view: it is at or below a visible path, or leads to one.
bool Visible(const RootView& root, const std::string& path) {
  if (root.visible.empty()) return true;
  for (const std::string& shown : root.visible) {
    if (path == shown || absl::StartsWith(path, shown + "/") ||
        absl::StartsWith(shown, path + "/")) {
      return true;
    }
  }
  return false;
}

// The entry `path` (absolute, inside the root) itself, not followed. RESOLVE_IN_ROOT
// keeps even a lookup that races with a change of the root inside it.
std::optional<base::UniqueFd> OpenEntry(int root_fd, const std::string& path) {
  const std::string relative = absl::StrCat(".", path);
  int fd = base::sys::RawOpenat2(root_fd, relative.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
                                 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) return std::nullopt;
  return base::UniqueFd(fd);
}

// `path` resolved inside the root with every link followed, or nullopt when it does not
// exist in the view (missing, dangling, out of the view, too many links).
std::optional<std::string> Resolve(const RootView& root, int root_fd, absl::string_view path) {
  std::deque<std::string> todo = absl::StrSplit(path, '/', absl::SkipEmpty());
  std::vector<std::string> done;
  int links = 0;
  while (!todo.empty()) {
    const std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {  // never above the root, as in the sandbox
      if (!done.empty()) done.pop_back();
      continue;
    }
    const std::string candidate =
        absl::StrCat("/", absl::StrJoin(done, "/"), done.empty() ? "" : "/", part);
    if (!Visible(root, candidate)) return std::nullopt;
    std::optional<base::UniqueFd> entry = OpenEntry(root_fd, candidate);
    struct stat st;
    if (!entry.has_value() || ::fstat(entry->get(), &st) != 0) return std::nullopt;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return std::nullopt;
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(entry->get(), "", target, sizeof(target) - 1);
      if (n <= 0) return std::nullopt;
      const absl::string_view text(target, static_cast<size_t>(n));
      if (absl::StartsWith(text, "/")) done.clear();
      std::vector<std::string> parts = absl::StrSplit(text, '/', absl::SkipEmpty());
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) return std::nullopt;
    done.push_back(part);
  }
  return absl::StrCat("/", absl::StrJoin(done, "/"));
}

}  // namespace

RootView ViewOf(const core::RootFs& root) {
  if (!root.host()) return {root.directory, {}};
  RootView view{"/", {}};
  for (const char* path : kHostVisible) view.visible.push_back(path);
  return view;
}

absl::StatusOr<std::string> FindProgramInRoot(const RootView& root, absl::string_view path,
                                              absl::string_view program) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd root_fd, base::sys::OpenDirectory(root.dir));
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (!absl::StartsWith(dir, "/")) continue;  // as exec does in the sandbox: absolute only
    std::optional<std::string> found =
        Resolve(root, root_fd.get(), absl::StrCat(dir, "/", program));
    if (!found.has_value()) continue;
    std::optional<base::UniqueFd> entry = OpenEntry(root_fd.get(), *found);
    struct stat st;
    if (!entry.has_value() || ::fstat(entry->get(), &st) != 0) continue;
    if (S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) return *found;
  }
  return absl::NotFoundError(absl::StrCat("no ", program, " on its PATH (", path, ")"));
}

std::string SandboxPath(const core::Spec& sandbox) {
  for (const std::string& entry : core::BuildEnvironment(sandbox)) {
    if (absl::StartsWith(entry, "PATH=")) return entry.substr(5);
  }
  return "";
}

}  // namespace zygo::supervisor
