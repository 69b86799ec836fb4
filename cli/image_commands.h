// The image commands of the static `zygo` binary: images, rmi, image prune (store
// reads and deletes), and the hand-off of pull/load/login to `zygo-image`.
#ifndef ZYGO_CLI_IMAGE_COMMANDS_H_
#define ZYGO_CLI_IMAGE_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::cli {

int ImagesCommand(int argc, char** argv);
int RmiCommand(int argc, char** argv);
int ImagePruneCommand(int argc, char** argv);

// Replaces this process with `zygo-image <command> <args...>`.
int ForwardToImageTool(const char* command, int argc, char** argv);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_IMAGE_COMMANDS_H_
