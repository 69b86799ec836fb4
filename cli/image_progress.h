// Progress for long image work: one rewritten status line on a terminal, nothing
// otherwise (logs and CI stay clean), or, when asked, a plain line per step and per quarter
// of each download (for a supervisor that relays them to `zygo up`).
#ifndef ZYGO_CLI_IMAGE_PROGRESS_H_
#define ZYGO_CLI_IMAGE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace zygo::cli {

class ImageProgress {
 public:
  // Draws on stderr only when it is a terminal, unless `lines`.
  explicit ImageProgress(bool lines = false);
  ~ImageProgress();

  void Step(const std::string& what);
  void Bytes(int64_t done, int64_t total);
  // Clears the status line.
  void Done();

 private:
  void Draw();
  bool enabled_;
  bool lines_;
  int quarter_ = 0;  // lines: the last quarter of the download printed
  std::string step_;
  int64_t done_ = 0, total_ = -1;
  bool drawn_ = false;
};

}  // namespace zygo::cli

#endif  // ZYGO_CLI_IMAGE_PROGRESS_H_
