// A runtime pool's compiled scripts, by digest: the bytecode a spare sent as Compiled the
// first time it ran a script, handed to later spares of the same zygote so they skip the
// compiler. Bounded in bytes (oldest out first); dropped with its zygote, so bytecode never
// meets another interpreter. Thread-safe.
#ifndef ZYGO_SUPERVISOR_SCRIPT_BYTECODE_CACHE_H_
#define ZYGO_SUPERVISOR_SCRIPT_BYTECODE_CACHE_H_

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace zygo::supervisor {

class ScriptBytecodeCache {
 public:
  explicit ScriptBytecodeCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  std::optional<std::string> Find(const std::string& digest) const;
  // Keeps the first bytecode given for a digest; a later one for it is ignored. One larger
  // than the whole budget is not kept.
  void Add(const std::string& digest, std::string bytecode);
  size_t bytes() const;

 private:
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> by_digest_;
  std::deque<std::string> oldest_first_;
  size_t bytes_ = 0;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SCRIPT_BYTECODE_CACHE_H_
