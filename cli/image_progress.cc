#include "cli/image_progress.h"

#include <stdio.h>
#include <unistd.h>

namespace zygo::cli {

ImageProgress::ImageProgress() : enabled_(isatty(STDERR_FILENO) == 1) {}

ImageProgress::~ImageProgress() { Done(); }

void ImageProgress::Step(const std::string& what) {
  step_ = what;
  done_ = 0;
  total_ = -1;
  Draw();
}

void ImageProgress::Bytes(int64_t done, int64_t total) {
  done_ = done;
  total_ = total;
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
