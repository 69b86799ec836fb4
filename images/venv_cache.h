// Cached venvs for `zygo run --requirements FILE`: a requirements file is built into a
// virtual environment once, inside a sandbox, with the image's own python and pip
// (`python3 -m venv --without-pip`, then `pip --python /venv/bin/python install -r`; no
// ensurepip, which put a second pip into every venv), and every later run of the same
// image with the same file mounts that venv read-only at /venv. Parent side.
//
//   <store>/venvs/sha256/<key>/   a finished venv (built at /venv, so its paths are right)
//   <store>/venvs/locks/<key>     flock'd while one is built, so it is built once
// (images/internal/keyed_entries.h).
#ifndef ZYGO_IMAGES_VENV_CACHE_H_
#define ZYGO_IMAGES_VENV_CACHE_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "images/run_image.h"
#include "images/sandbox_job.h"
#include "images/store.h"

namespace zygo::images {

// Where a venv is built and mounted inside the sandbox.
inline constexpr char kVenvMountpoint[] = "/venv";

struct VenvRequest {
  std::string requirements;  // host path of the requirements file
  // Host directory of wheels and sdists for pip (--no-index --find-links), mounted
  // read-only at /tmp in the build sandbox; empty: pip's own configuration, which in a
  // loopback-only sandbox finds nothing unless the run may use the host's network.
  std::string find_links;
  core::Loosening loosening;  // the run's own
  // The key of the system layer (images/system_layer.h) whose root the venv is built
  // against, when the run has one: its packages' libraries are what the venv's wheels
  // link to. Empty: the image's own root (or its bytecode root, which differs only in
  // .pyc files).
  std::string system_key;
};

struct Venv {
  std::string path;  // <store>/venvs/sha256/<hex>
  std::string key;   // sha256:<hex>
  bool built = false;
  double build_ms = 0;
};

// sha256 over a format tag, the image's manifest digest and the file's exact bytes: any
// edit makes a new venv; two projects with the same file share one. With a system layer,
// its key too (under another format tag, so no venv without one changes its key).
std::string VenvKey(absl::string_view manifest_digest, absl::string_view requirements,
                    absl::string_view system_key = "");

// The venv for `request` in `image`, whose root for this run is `rootfs` (the image's own
// or its bytecode root), built first if the store lacks it. Adds the mountpoint /venv to
// `rootfs` if missing (the store owns that copy). Errors are one line each: an unreadable
// file, a missing --find-links directory, an image without pip, pip's own ERROR line.
absl::StatusOr<Venv> EnsureVenv(Store& store, const RunnableImage& image, const std::string& rootfs,
                                const VenvRequest& request, const SandboxRunner& run);

// Removes the venvs of images the store no longer records (`live_manifests` holds the
// manifest digests of every record) and returns the bytes freed. Each venv names its
// image in a small file written when it was built.
absl::StatusOr<int64_t> PruneVenvs(const Store& store, const std::set<std::string>& live_manifests);

// -e style entries for a run with the venv: VIRTUAL_ENV=/venv and PATH=/venv/bin in front
// of the image's PATH (from `image_env`, else the default one).
std::vector<std::string> VenvEnvironment(const std::vector<std::string>& image_env);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_VENV_CACHE_H_
