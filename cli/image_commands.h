// The image commands of the static `zygo` binary: images, rmi, image prune (store
// reads and deletes), and the hand-off of pull/load/login to `zygo-image`.
#ifndef ZYGO_CLI_IMAGE_COMMANDS_H_
#define ZYGO_CLI_IMAGE_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/pull_policy.h"
#include "images/run_image.h"

namespace zygo::cli {

int ImagesCommand(int argc, char** argv);
int RmiCommand(int argc, char** argv);
int ImagePruneCommand(int argc, char** argv);

// Replaces this process with `zygo-image <command> <args...>`.
int ForwardToImageTool(const char* command, int argc, char** argv);

// The image `zygo run` asked for, pulling it first as `policy` says (by running
// `zygo-image pull`, whose progress goes to this terminal).
absl::StatusOr<images::RunnableImage> ResolveImageForRun(const std::string& image,
                                                         PullPolicy policy, bool tls_verify);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_IMAGE_COMMANDS_H_
