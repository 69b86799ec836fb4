// Progress for long image work: one rewritten status line on a terminal, nothing
// otherwise (logs and CI stay clean).
#ifndef ZYGO_CLI_IMAGE_PROGRESS_H_
#define ZYGO_CLI_IMAGE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace zygo::cli {

class ImageProgress {
 public:
  // Draws on stderr only when it is a terminal.
  ImageProgress();
  ~ImageProgress();

  void Step(const std::string& what);
  void Bytes(int64_t done, int64_t total);
  // Clears the status line.
  void Done();

 private:
  void Draw();
  bool enabled_;
  std::string step_;
  int64_t done_ = 0, total_ = -1;
  bool drawn_ = false;
};

}  // namespace zygo::cli

#endif  // ZYGO_CLI_IMAGE_PROGRESS_H_
