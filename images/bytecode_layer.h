// The bytecode layer: an image whose Python standard library ships .py files without
// .pyc (the official python:*-slim images, Debian's python3 without its postinst) makes
// every run compile every module it imports, since a sandbox's root is read-only. So on
// first use Zygo compiles the stdlib once, inside a sandbox with the image's own python,
// into unchecked-hash .pyc files (a root in the store never changes, so there is nothing
// to check them against) and runs the image from a derived root that has them, recorded
// in images.json as "<reference>+bytecode.<key>". Parent side.
#ifndef ZYGO_IMAGES_BYTECODE_LAYER_H_
#define ZYGO_IMAGES_BYTECODE_LAYER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "images/run_image.h"
#include "images/sandbox_job.h"
#include "images/store.h"

namespace zygo::images {

// One python3.X standard library directory that has sources and no bytecode.
struct StdlibDir {
  std::string dir;        // inside the image: "/usr/lib/python3.11"
  std::string cache_tag;  // "cpython-311": the .pyc names' middle part
  std::string python;     // the interpreter of that version: "/usr/bin/python3.11"
};

// The stdlib directories of `rootfs` that need compiling: usr/local/lib/python3.X and
// usr/lib/python3.X (real directories, not symlinks) holding os.py but no
// __pycache__/os.cpython-3X.pyc. Empty for an image without Python, or whose stdlib
// already has bytecode. A few readdir/lstat calls: cheap enough for every run.
std::vector<StdlibDir> FindUncompiledStdlib(const std::string& rootfs);

// The bytecode root's store key for the image with `manifest_digest`: the sha256 digest
// of a small JSON document naming this format version and the manifest. The document
// is stored as a blob, so the derived record's "manifest" is a blob like any other.
std::string BytecodeKeyDocument(absl::string_view manifest_digest);
std::string BytecodeKey(absl::string_view manifest_digest);

// "<canonical reference>+bytecode.<first 12 hex digits of the key>".
std::string BytecodeReference(absl::string_view canonical, absl::string_view key);

struct BytecodeRoot {
  std::string rootfs;  // <store>/rootfs/sha256/<key hex>
  std::string reference;
  bool built = false;  // this call built it (false: it was already there)
  double build_ms = 0;
  int64_t pyc_files = 0;
  int64_t pyc_bytes = 0;
};

// The bytecode root of `image`, built first if the store lacks it; nullopt when the
// image needs none (no Python, or its stdlib already compiled). Building runs the
// image's python in a sandbox through `run` (compileall -j0, unchecked-hash, with
// PYTHONPYCACHEPREFIX pointing into a writable mount), moves each .pyc next to its
// source under __pycache__/ in a hard-linked copy of the image's root, commits that
// under rootfs/sha256/<key> and records it. Concurrent builds of one image wait for
// each other (an flock on the image's root). An error means no bytecode root: the
// caller warns and runs the original image.
absl::StatusOr<std::optional<BytecodeRoot>> EnsureBytecodeRoot(Store& store,
                                                               const RunnableImage& image,
                                                               const SandboxRunner& run,
                                                               core::Loosening loosening = {});

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_BYTECODE_LAYER_H_
