#include "core/internal/cgroup_v2_tree.h"

#include <errno.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/internal/cgroup_fs.h"

namespace zygo::core::internal {
namespace {

namespace sys = ::zygo::base::sys;

std::vector<std::string> Words(absl::string_view text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
}

// "+memory +pids" / "-memory -pids"
std::string Switches(char sign, const std::vector<std::string>& controllers) {
  return absl::StrJoin(controllers, " ", [sign](std::string* out, const std::string& name) {
    absl::StrAppend(out, std::string(1, sign), name);
  });
}

}  // namespace

const std::vector<std::string>& SandboxControllers() {
  static const std::vector<std::string>* const controllers =
      new std::vector<std::string>{"memory", "pids", "cpu"};
  return *controllers;
}

std::vector<std::string> MissingControllers(absl::string_view listed) {
  const std::vector<std::string> words = Words(listed);
  std::vector<std::string> missing;
  for (const std::string& controller : SandboxControllers()) {
    if (std::find(words.begin(), words.end(), controller) == words.end()) {
      missing.push_back(controller);
    }
  }
  return missing;
}

absl::StatusOr<std::vector<std::string>> MissingAvailableControllers(const std::string& dir) {
  ZYGO_ASSIGN_OR_RETURN(std::string listed,
                        sys::ReadFile(absl::StrCat(dir, "/cgroup.controllers")));
  return MissingControllers(listed);
}

bool IsRootCgroup(const std::string& dir) {
  return PathExists(absl::StrCat(dir, "/cgroup.controllers")) &&
         !PathExists(absl::StrCat(dir, "/cgroup.type"));
}

absl::StatusOr<std::vector<pid_t>> MemberProcesses(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/cgroup.procs");
  ZYGO_ASSIGN_OR_RETURN(std::string content, sys::ReadFile(path));
  std::vector<pid_t> pids;
  for (const std::string& word : Words(content)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(word, &pid)) {
      return absl::InternalError(absl::StrCat(path, " lists \"", word, "\", not a pid"));
    }
    pids.push_back(pid);
  }
  return pids;
}

absl::Status CheckMayManage(const std::string& dir) {
  for (const std::string& path :
       {dir, absl::StrCat(dir, "/cgroup.procs"), absl::StrCat(dir, "/cgroup.subtree_control")}) {
    ZYGO_RETURN_IF_ERROR(sys::CheckWritable(path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> EnableControllers(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/cgroup.subtree_control");
  ZYGO_ASSIGN_OR_RETURN(std::string content, sys::ReadFile(path));
  std::vector<std::string> to_enable = MissingControllers(content);
  if (to_enable.empty()) return to_enable;
  const std::string value = Switches('+', to_enable);
  absl::Status written = WriteControlFile(path, value, IfMissing::kFail);
  if (sys::ErrnoOf(written) == EBUSY) {
    return absl::FailedPreconditionError(absl::StrCat(
        "write(", path, ", \"", value,
        "\"): EBUSY: cgroup v2's no-internal-process rule forbids turning on controllers "
        "for the children of a (non-root) cgroup that has processes of its own, and ",
        dir, " has some"));
  }
  ZYGO_RETURN_IF_ERROR(written);
  return to_enable;
}

absl::Status DisableControllers(const std::string& dir,
                                const std::vector<std::string>& controllers) {
  if (controllers.empty()) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(dir, "/cgroup.subtree_control"), Switches('-', controllers),
                          IfMissing::kFail);
}

}  // namespace zygo::core::internal
