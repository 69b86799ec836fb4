#include "bench/pull/store_snapshot.h"

#include <filesystem>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"
#include "images/store.h"

namespace zygo::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKinds[] = {"blobs", "layers", "rootfs"};

std::vector<std::string> Added(const std::set<std::string>& before,
                               const std::set<std::string>& after) {
  std::vector<std::string> added;
  for (const std::string& item : after) {
    if (!before.count(item)) added.push_back(item);
  }
  return added;
}

}  // namespace

absl::StatusOr<StoreSnapshot> TakeStoreSnapshot(const std::string& root) {
  StoreSnapshot snapshot;
  std::error_code ec;
  if (!fs::exists(root, ec)) return snapshot;
  ZYGO_ASSIGN_OR_RETURN(images::Store store, images::Store::Open(root));
  ZYGO_ASSIGN_OR_RETURN(std::vector<images::ImageRecord> records, store.List());
  for (const images::ImageRecord& record : records) snapshot.references.insert(record.reference);
  for (const char* kind : kKinds) {
    const fs::path dir = fs::path(root) / kind / "sha256";
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      snapshot.entries.insert(absl::StrCat(kind, "/", it->path().filename().string()));
    }
    if (ec) return absl::InternalError(absl::StrCat("listing ", dir.string(), ": ", ec.message()));
  }
  return snapshot;
}

std::string DescribeAdded(const StoreSnapshot& before, const StoreSnapshot& after) {
  std::vector<std::string> parts;
  std::vector<std::string> references = Added(before.references, after.references);
  if (!references.empty()) {
    parts.push_back(absl::StrCat("references ", absl::StrJoin(references, ", ")));
  }
  std::map<std::string, int> counts;
  for (const std::string& entry : Added(before.entries, after.entries)) {
    ++counts[entry.substr(0, entry.find('/'))];
  }
  std::vector<std::string> kinds;
  for (const char* kind : kKinds) {
    auto it = counts.find(kind);
    if (it == counts.end()) continue;
    // "1 blob", "2 blobs", "1 layer", "1 rootfs"
    std::string name = kind;
    if (it->second == 1 && name != "rootfs") name.pop_back();
    kinds.push_back(absl::StrCat(it->second, " ", name));
  }
  if (!kinds.empty()) parts.push_back(absl::StrJoin(kinds, ", "));
  return absl::StrJoin(parts, "; ");
}

bool AddedBytecodeImage(const StoreSnapshot& before, const StoreSnapshot& after) {
  for (const std::string& reference : Added(before.references, after.references)) {
    if (absl::StrContains(reference, "+bytecode")) return true;
  }
  return false;
}

}  // namespace zygo::bench
