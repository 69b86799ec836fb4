#include "supervisor/script_bytecode_cache.h"

#include <utility>

namespace zygo::supervisor {

std::optional<std::string> ScriptBytecodeCache::Find(const std::string& digest) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = by_digest_.find(digest);
  if (found == by_digest_.end()) return std::nullopt;
  return found->second;
}

void ScriptBytecodeCache::Add(const std::string& digest, std::string bytecode) {
  const size_t size = digest.size() + bytecode.size();
  if (size > max_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (by_digest_.count(digest) != 0) return;
  while (bytes_ + size > max_bytes_ && !oldest_first_.empty()) {
    auto oldest = by_digest_.find(oldest_first_.front());
    bytes_ -= oldest->first.size() + oldest->second.size();
    by_digest_.erase(oldest);
    oldest_first_.pop_front();
  }
  by_digest_.emplace(digest, std::move(bytecode));
  oldest_first_.push_back(digest);
  bytes_ += size;
}

size_t ScriptBytecodeCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace zygo::supervisor
