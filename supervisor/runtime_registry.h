// The runtime zygotes of the zygote tree, one per distinct runtime sandbox (image, venv,
// the interpreter's start-up environment), shared by every function that can fork from it.
// A runtime lives as long as a function zygote forked from it does (they hold it), and is
// started again when a function next warms. Parent side; thread-safe.
#ifndef ZYGO_SUPERVISOR_RUNTIME_REGISTRY_H_
#define ZYGO_SUPERVISOR_RUNTIME_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "supervisor/runtime_zygote.h"

namespace zygo::supervisor {

class RuntimeRegistry {
 public:
  using MakeConfig = std::function<absl::StatusOr<RuntimeZygoteConfig>()>;

  // The live runtime zygote for `key`, or a new one started from `make()`. Warm-ups of the
  // same key wait for one start; other keys do not wait for it.
  absl::StatusOr<std::shared_ptr<RuntimeZygote>> Get(const std::string& key,
                                                     const MakeConfig& make);
  // How many runtime zygotes are alive (for `zygo ls` and tests).
  int Alive() const;

 private:
  struct Entry {
    std::mutex starting;                   // one start at a time per key
    std::weak_ptr<RuntimeZygote> runtime;  // guarded by mu_
  };
  std::shared_ptr<RuntimeZygote> Live(const Entry& entry) const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_RUNTIME_REGISTRY_H_
