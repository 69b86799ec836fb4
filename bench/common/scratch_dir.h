// A benchmark's temporary directory: made fresh, removed with everything in it when the
// owner goes away, whichever way the benchmark ends. Parent side; no privileges.
#ifndef ZYGO_BENCH_COMMON_SCRATCH_DIR_H_
#define ZYGO_BENCH_COMMON_SCRATCH_DIR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::bench {

class ScratchDir {
 public:
  // Makes "<$TMPDIR or /tmp>/<prefix>.XXXXXX".
  static absl::StatusOr<ScratchDir> Create(const std::string& prefix);

  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();  // removes the tree; a failure is printed to stderr (a destructor
                  // cannot return it, and the leftover must not go unnoticed)

  const std::string& path() const { return path_; }
  // path()/name; nothing is created.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The file system type holding `path`, for the report: "ext4", "tmpfs", "xfs", "btrfs",
// "overlay", or the magic number in hex.
std::string FileSystemName(const std::string& path);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_SCRATCH_DIR_H_
