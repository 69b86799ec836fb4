// What an image store holds, by name, so a benchmark can tell what a command added to
// it: a bytecode layer built on first use, or a warm pull that unpacked something after
// all. Reads only; parent side; needs read access to the store.
#ifndef ZYGO_BENCH_PULL_STORE_SNAPSHOT_H_
#define ZYGO_BENCH_PULL_STORE_SNAPSHOT_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace zygo::bench {

struct StoreSnapshot {
  std::set<std::string> references;  // canonical, from images.json
  std::set<std::string> entries;     // "blobs/<hex>", "layers/<hex>", "rootfs/<hex>"
};

// The store at `root`; an absent store is an empty snapshot (nothing is created).
absl::StatusOr<StoreSnapshot> TakeStoreSnapshot(const std::string& root);

// What `after` holds that `before` does not, for a report: "references
// docker.io/library/python:bench+bytecode.ab12; 1 blob, 1 layer, 1 rootfs", or ""
// when nothing was added.
std::string DescribeAdded(const StoreSnapshot& before, const StoreSnapshot& after);

// Whether `after` holds a reference `before` does not that names a bytecode layer
// ("<image>+bytecode.<key>", as the store serves one).
bool AddedBytecodeImage(const StoreSnapshot& before, const StoreSnapshot& after);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_PULL_STORE_SNAPSHOT_H_
