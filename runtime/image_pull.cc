#include "runtime/image_pull.h"

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/helper_binary.h"
#include "core/base/status_macros.h"
#include "images/store.h"

namespace zygo::runtime {
namespace {

// Runs zygo-image with `args`; its report goes to stderr, as stdout belongs to the
// command that runs next.
absl::Status RunImageTool(const std::vector<std::string>& args) {
  ZYGO_ASSIGN_OR_RETURN(std::string tool, ImageToolPath());
  std::vector<char*> argv = {tool.data()};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork for zygo-image failed");
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execv(tool.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return absl::AbortedError("");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ImageToolPath() {
  return base::FindHelperBinary("zygo-image", "cli", "the pull/load/login tool");
}

absl::StatusOr<images::RunnableImage> FindOrPullImage(const images::Store& store,
                                                      const images::Reference& reference,
                                                      const std::string& text,
                                                      const PullOptions& options) {
  if (options.policy != PullPolicy::kAlways) {
    ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> found,
                          images::FindRunnableImage(store, reference));
    if (found.has_value()) return std::move(*found);
    if (options.policy == PullPolicy::kNever) {
      return absl::NotFoundError(absl::StrCat("image ", reference.Familiar(),
                                              " is not in the store", options.when_missing));
    }
  }
  std::vector<std::string> args = {"pull"};
  if (options.tls_verify == images::TlsVerify::kFalse) args.push_back("--tls-verify=false");
  if (options.tls_verify == images::TlsVerify::kTrue) args.push_back("--tls-verify=true");
  args.push_back(text);
  ZYGO_RETURN_IF_ERROR(RunImageTool(args));
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> found,
                        images::FindRunnableImage(store, reference));
  if (!found.has_value()) {
    return absl::InternalError(
        absl::StrCat("image ", reference.Familiar(), " missing after its pull"));
  }
  return std::move(*found);
}

}  // namespace zygo::runtime
