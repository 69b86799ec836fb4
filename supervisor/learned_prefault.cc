// Merging the children's Touched reports into one capped Prefault.
#include "supervisor/learned_prefault.h"

#include <algorithm>
#include <utility>

namespace zygo::supervisor {
namespace {

uint64_t MaxPages(int64_t memory_limit_bytes) {
  uint64_t bytes = LearnedPrefault::kMaxBytes;
  if (memory_limit_bytes > 0)
    bytes = std::min(bytes, static_cast<uint64_t>(memory_limit_bytes) / 4);
  return std::min(bytes / wire::kPageBytes, wire::kMaxPageRunPages);
}

uint64_t End(const wire::PageRun& run) { return run.start + run.pages * wire::kPageBytes; }

}  // namespace

std::vector<wire::PageRun> MergePageRuns(std::vector<wire::PageRun> runs, uint64_t max_pages) {
  std::sort(runs.begin(), runs.end(), [](const wire::PageRun& a, const wire::PageRun& b) {
    return a.start != b.start ? a.start < b.start : a.write < b.write;
  });
  std::vector<wire::PageRun> merged;
  for (const wire::PageRun& run : runs) {
    // The last run of the same kind: read and write runs may interleave, never overlap in
    // practice (a mapping is either writable or not).
    auto same = std::find_if(merged.rbegin(), merged.rend(),
                             [&](const wire::PageRun& m) { return m.write == run.write; });
    if (same != merged.rend() && End(*same) >= run.start) {
      const uint64_t end = std::max(End(*same), End(run));
      same->pages = static_cast<uint32_t>((end - same->start) / wire::kPageBytes);
      continue;
    }
    merged.push_back(run);
  }
  std::vector<wire::PageRun> capped;
  uint64_t pages = 0;
  for (wire::PageRun run : merged) {
    if (pages == max_pages || capped.size() == wire::kMaxPageRuns) break;
    run.pages = static_cast<uint32_t>(std::min<uint64_t>(run.pages, max_pages - pages));
    pages += run.pages;
    capped.push_back(run);
  }
  return capped;
}

LearnedPrefault::LearnedPrefault(int64_t memory_limit_bytes)
    : max_pages_(MaxPages(memory_limit_bytes)) {}

bool LearnedPrefault::WantsReport() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_ < kReports && max_pages_ > 0;
}

void LearnedPrefault::Learn(const std::vector<wire::PageRun>& touched) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reports_ >= kReports) return;
  ++reports_;
  std::vector<wire::PageRun> all = runs_;
  all.insert(all.end(), touched.begin(), touched.end());
  runs_ = MergePageRuns(std::move(all), max_pages_);
  if (runs_.empty()) return;
  absl::StatusOr<wire::Frame> frame = wire::Encode(wire::PrefaultMessage{runs_});
  if (frame.ok()) frame_ = std::make_shared<const wire::Frame>(*std::move(frame));
}

std::shared_ptr<const wire::Frame> LearnedPrefault::frame() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frame_;
}

}  // namespace zygo::supervisor
