#include "cli/image_progress.h"

#include <stdio.h>
#include <unistd.h>

namespace zygo::cli {

ImageProgress::ImageProgress(bool lines)
    : enabled_(!lines && isatty(STDERR_FILENO) == 1), lines_(lines) {}

ImageProgress::~ImageProgress() { Done(); }

void ImageProgress::Step(const std::string& what) {
  step_ = what;
  done_ = 0;
  total_ = -1;
  quarter_ = 0;
  if (lines_) {
    fprintf(stderr, "%s\n", step_.c_str());
    fflush(stderr);
  }
  Draw();
}

void ImageProgress::Bytes(int64_t done, int64_t total) {
  done_ = done;
  total_ = total;
  if (lines_ && total > 0 && done * 4 / total > quarter_) {
    quarter_ = static_cast<int>(done * 4 / total);
    fprintf(stderr, "%s: %.1f/%.1f MB\n", step_.c_str(), done / 1e6, total / 1e6);
    fflush(stderr);
  }
  Draw();
}

void ImageProgress::Draw() {
  if (!enabled_) return;
  constexpr int kBarWidth = 24;
  if (total_ > 0) {
    int filled = static_cast<int>(kBarWidth * done_ / total_);
    fprintf(stderr, "\r\033[K%s [%-*.*s] %.1f/%.1f MB", step_.c_str(), kBarWidth, filled,
            "========================", done_ / 1e6, total_ / 1e6);
  } else {
    fprintf(stderr, "\r\033[K%s", step_.c_str());
  }
  fflush(stderr);
  drawn_ = true;
}

void ImageProgress::Done() {
  if (enabled_ && drawn_) fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace zygo::cli
