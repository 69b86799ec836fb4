// Fitting the connection caps to the open-file limit, and counting connections per client.
#include "supervisor/connection_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace zygo::supervisor {

HttpLimits FitToOpenFiles(HttpLimits wanted, uint64_t open_files) {
  const uint64_t reserved = std::max<uint64_t>(256, open_files / 4);
  const uint64_t budget = open_files > reserved ? (open_files - reserved) / 2 : 0;
  wanted.max_connections = static_cast<size_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(wanted.max_connections, budget)));
  wanted.max_connections_per_client =
      std::max<size_t>(1, std::min(wanted.max_connections_per_client, wanted.max_connections));
  return wanted;
}

absl::Status ConnectionAdmission::Admit(uid_t uid) {
  if (total_ >= max_total_) {
    return absl::UnavailableError(absl::StrCat("the supervisor has ", total_,
                                               " connections open, the most it takes; try again"));
  }
  if (const size_t mine = open_of(uid); mine >= max_per_client_) {
    return absl::UnavailableError(absl::StrCat("uid ", uid, " has ", mine,
                                               " connections open, the most one client may have"));
  }
  ++per_client_[uid];
  ++total_;
  return absl::OkStatus();
}

void ConnectionAdmission::Release(uid_t uid) {
  auto found = per_client_.find(uid);
  if (found == per_client_.end()) return;  // never counted
  if (--found->second == 0) per_client_.erase(found);
  --total_;
}

size_t ConnectionAdmission::open_of(uid_t uid) const {
  auto found = per_client_.find(uid);
  return found == per_client_.end() ? 0 : found->second;
}

}  // namespace zygo::supervisor
