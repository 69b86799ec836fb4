// Finds a program on a sandbox's PATH the way the sandbox itself would, without starting
// one: in the image's root, with the image's links resolved inside that root. A node
// function's `node` is found this way when it warms (docs/function-spec.md).
#ifndef ZYGO_SUPERVISOR_IMAGE_PROGRAM_H_
#define ZYGO_SUPERVISOR_IMAGE_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/spec.h"

namespace zygo::supervisor {

// A root filesystem as a sandbox sees it: the host directory `dir` is its "/", and only
// paths at or below one of `visible` (or above one: the directories leading there) exist
// in it; an empty `visible` means all of it (an OCI image's or a dir: image's root).
struct RootView {
  std::string dir;
  std::vector<std::string> visible;
};

// The view of `sandbox.root` its launch gives: an image's directory whole, or for the
// built-in host image the host's /usr, /bin, /sbin, /lib* and /etc/alternatives
// (core/mount_plan.cc binds those read-only; a link to anywhere else dangles inside).
RootView ViewOf(const core::RootFs& root);

// The first executable regular file named `program` in the absolute directories of
// `path` (a PATH value), looked up inside `root`: every symlink, relative or absolute, is
// resolved against the root, never the host (an image's /usr/local/bin/node ->
// ../lib/node/bin/node stays in the image), and a path leaving the view finds nothing.
// Returns the program's resolved path inside the root ("/usr/lib/node/bin/node"), or
// NotFound when no directory has it. Parent side; reads the filesystem, needs no
// privileges beyond read access to the root.
absl::StatusOr<std::string> FindProgramInRoot(const RootView& root, absl::string_view path,
                                              absl::string_view program);

// The PATH the sandbox's processes get: [env], then the image's Env, then the default
// (core::BuildEnvironment).
std::string SandboxPath(const core::Spec& sandbox);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_IMAGE_PROGRAM_H_
