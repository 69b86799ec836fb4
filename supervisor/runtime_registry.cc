#include "supervisor/runtime_registry.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "supervisor/log.h"

namespace zygo::supervisor {

absl::StatusOr<std::shared_ptr<RuntimeZygote>> RuntimeRegistry::Get(const std::string& key,
                                                                    const MakeConfig& make) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Entry>& slot = entries_[key];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard<std::mutex> starting(entry->starting);
  if (std::shared_ptr<RuntimeZygote> live = Live(*entry)) return live;
  ZYGO_ASSIGN_OR_RETURN(RuntimeZygoteConfig config, make());
  const std::string name = config.name;
  const auto start = absl::Now();
  ZYGO_ASSIGN_OR_RETURN(std::shared_ptr<RuntimeZygote> started,
                        RuntimeZygote::Start(std::move(config)));
  Log(LogLevel::kInfo, absl::StrFormat("%s is warm (%.1f ms)", name,
                                       absl::ToDoubleMilliseconds(absl::Now() - start)));
  std::lock_guard<std::mutex> lock(mu_);
  entry->runtime = started;
  return started;
}

std::shared_ptr<RuntimeZygote> RuntimeRegistry::Live(const Entry& entry) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<RuntimeZygote> live = entry.runtime.lock();
  return live && live->alive() ? live : nullptr;
}

int RuntimeRegistry::Alive() const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
  }
  int alive = 0;
  for (const auto& entry : entries) alive += Live(*entry) != nullptr ? 1 : 0;
  return alive;
}

}  // namespace zygo::supervisor
