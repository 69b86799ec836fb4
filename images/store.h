// The content-addressed image store:
//   <root>/blobs/sha256/<hex>         manifests, configs and compressed layers, by digest
//   <root>/layers/sha256/<hex>/       one layer unpacked, by its diff_id (uncompressed digest)
//   <root>/rootfs/sha256/<hex>/       a flattened root, by the manifest digest
//   <root>/images.json                references -> manifest digests
//   <root>/tmp/                       work in progress; anything here is garbage on restart
// Every entry is written under tmp/ and renamed into place, so an interrupted pull leaves
// either a whole entry or none. images.json is updated under an flock and replaced
// atomically; two pulls of the same image at once are safe. Parent side.
#ifndef ZYGO_IMAGES_STORE_H_
#define ZYGO_IMAGES_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

struct ImageRecord {
  std::string reference;        // canonical reference it was pulled or loaded as
  std::string manifest_digest;  // the platform manifest (not an index)
  std::string config_digest;
  std::vector<std::string> layer_digests;  // compressed blobs, bottom first
  std::vector<std::string> diff_ids;       // from the config, bottom first
  int64_t size_bytes = 0;                  // compressed layers plus config
  int64_t created_unix = 0;                // when it entered this store
};

class Store {
 public:
  // Opens (creating if needed) the store at `root`.
  static absl::StatusOr<Store> Open(const std::string& root);

  // $ZYGO_HOME, else $XDG_DATA_HOME/zygo, else ~/.local/share/zygo; /var/lib/zygo for root.
  static std::string DefaultRoot();

  const std::string& root() const { return root_; }

  std::string BlobPath(absl::string_view digest) const;
  std::string LayerPath(absl::string_view diff_id) const;
  std::string RootfsPath(absl::string_view manifest_digest) const;
  bool HasBlob(absl::string_view digest) const;
  bool HasLayer(absl::string_view diff_id) const;
  bool HasRootfs(absl::string_view manifest_digest) const;

  // A fresh, empty path under tmp/ (a file or directory name, not yet created).
  std::string TempPath(absl::string_view purpose) const;

  // Verifies `bytes` hash to `digest`, then stores them atomically. Idempotent.
  absl::Status PutBlob(absl::string_view digest, absl::string_view bytes);
  // Moves a finished temp file (already verified by the caller) into place as `digest`.
  absl::Status CommitBlobFile(absl::string_view digest, const std::string& temp_file);
  // Moves a finished temp directory into place (layers/ or rootfs/). If another process
  // got there first, the temp directory is removed and the existing entry kept.
  absl::Status CommitLayerDir(absl::string_view diff_id, const std::string& temp_dir);
  absl::Status CommitRootfsDir(absl::string_view manifest_digest, const std::string& temp_dir);
  absl::StatusOr<std::string> ReadBlob(absl::string_view digest) const;

  // images.json: look up, record (replacing the reference's previous record), remove.
  absl::StatusOr<std::optional<ImageRecord>> Find(absl::string_view reference) const;
  absl::StatusOr<std::vector<ImageRecord>> List() const;
  absl::Status Record(const ImageRecord& record);
  absl::Status Remove(absl::string_view reference);  // NotFound if not there

  // Removes blobs, layers and rootfs no record references, and everything in tmp/ older
  // than an hour (a crashed pull's leftovers). Returns the bytes freed.
  absl::StatusOr<int64_t> Prune();

 private:
  explicit Store(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_STORE_H_
