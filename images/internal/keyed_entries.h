// Store entries keyed by a digest and owned by an image, as cached venvs and system
// layers keep them:
//   <store>/<kind>/sha256/<hex>/   an entry, holding a file that names its image's
//                                  manifest digest
//   <store>/<kind>/locks/<hex>     flock'd while the entry is built, so it is built once
// Parent side.
#ifndef ZYGO_IMAGES_INTERNAL_KEYED_ENTRIES_H_
#define ZYGO_IMAGES_INTERNAL_KEYED_ENTRIES_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::images {

// Makes <kind_dir>/sha256 and <kind_dir>/locks if missing, then takes an exclusive flock
// on <kind_dir>/locks/<hex>, waiting for another builder of the same entry. The lock is
// held until the fd is closed.
absl::StatusOr<base::UniqueFd> LockEntry(const std::string& kind_dir, const std::string& hex);

// Removes every entry of <kind_dir>/sha256 whose `owner_file` does not name a manifest
// digest in `live_manifests` (an unreadable one counts as no owner) and returns the bytes
// of the regular files it freed.
absl::StatusOr<int64_t> PruneOwnedEntries(const std::string& kind_dir,
                                          const std::string& owner_file,
                                          const std::set<std::string>& live_manifests);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_KEYED_ENTRIES_H_
