#include "runtime/image_config.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace zygo::runtime {

absl::Status ApplyImageConfig(const images::RunnableImage& image, const CallerSettings& caller,
                              core::Spec& spec) {
  const images::ImageConfig& config = image.config;
  spec.image_env = config.env;
  if (!caller.workdir && !config.working_dir.empty()) spec.workdir = config.working_dir;
  if (!caller.user && !config.user.empty()) {
    ZYGO_ASSIGN_OR_RETURN(images::NumericUser user,
                          images::ResolveImageUser(image.rootfs, config.user));
    spec.uid = user.uid;
    spec.gid = user.gid;
  }
  if (!caller.command_is_the_images) return absl::OkStatus();
  std::vector<std::string> argv = config.entrypoint;
  const std::vector<std::string>& rest = spec.argv.empty() ? config.cmd : spec.argv;
  argv.insert(argv.end(), rest.begin(), rest.end());
  if (argv.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image ", spec.image_name, " has no Entrypoint or Cmd: give a command to run"));
  }
  spec.argv = std::move(argv);
  return absl::OkStatus();
}

}  // namespace zygo::runtime
