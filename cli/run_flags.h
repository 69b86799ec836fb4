// Parses `zygo run [flags] IMAGE CMD [ARG...]` into a Spec and the run's own options.
#ifndef ZYGO_CLI_RUN_FLAGS_H_
#define ZYGO_CLI_RUN_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/spec.h"
#include "runtime/image_pull.h"
#include "runtime/image_source.h"

namespace zygo::cli {

using runtime::PullPolicy;

struct RunOptions {
  core::Spec spec;  // its root and image config come from `image` (runtime/)
  runtime::ImageSource image;
  std::string outcome_path;  // --outcome FILE
  bool dry_run = false;
  bool json = false;
  bool verbose = false;
  bool help = false;
  bool workdir_set = false;  // -w given: the image's WorkingDir does not apply
  bool user_set = false;     // -u given: the image's User does not apply
  PullPolicy pull = PullPolicy::kMissing;
  images::TlsVerify tls_verify = images::TlsVerify::kDefault;
  std::string requirements;         // --requirements FILE: a cached venv at /venv
  std::string find_links;           // --find-links DIR: pip's wheels, offline
  std::vector<std::string> system;  // --system PKG...: Debian packages in a system layer
};

// `args` excludes the program name and the word "run". Flags stop at IMAGE, so the
// command's own flags pass through untouched.
absl::StatusOr<RunOptions> ParseRunFlags(int argc, char** argv);

// The text `zygo run --help` prints.
const char* RunUsage();

}  // namespace zygo::cli

#endif  // ZYGO_CLI_RUN_FLAGS_H_
