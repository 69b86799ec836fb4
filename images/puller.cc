#include "images/puller.h"

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "images/manifest.h"

namespace zygo::images {
namespace {

absl::Status EnsureBlob(Store& store, RegistryClient& client, const Reference& ref,
                        const Descriptor& blob, const StepFn& step, const ProgressFn& progress) {
  if (store.HasBlob(blob.digest)) return absl::OkStatus();
  if (step)
    step(absl::StrCat("downloading ", blob.digest.substr(0, 19), " (", blob.size, " bytes)"));
  std::string temp = store.TempPath("blob");
  ZYGO_RETURN_IF_ERROR(client.DownloadBlob(ref, blob.digest, blob.size, temp, progress));
  return store.CommitBlobFile(blob.digest, temp);
}

}  // namespace

absl::StatusOr<ImageRecord> PullImage(Store& store, RegistryClient& client, const Reference& ref,
                                      const StepFn& step, const ProgressFn& progress) {
  const std::string& wanted = ref.digest.empty() ? ref.tag : ref.digest;
  ZYGO_ASSIGN_OR_RETURN(FetchedManifest fetched, client.GetManifest(ref, wanted));
  ZYGO_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(fetched.bytes, fetched.media_type));
  if (manifest.is_index) {
    ZYGO_ASSIGN_OR_RETURN(Descriptor platform, SelectPlatform(manifest));
    ZYGO_RETURN_IF_ERROR(store.PutBlob(fetched.digest, fetched.bytes));
    ZYGO_ASSIGN_OR_RETURN(fetched, client.GetManifest(ref, platform.digest));
    ZYGO_ASSIGN_OR_RETURN(manifest, ParseManifest(fetched.bytes, fetched.media_type));
    if (manifest.is_index) {
      return absl::InvalidArgumentError(
          absl::StrCat(ref.Canonical(), ": an index inside an index is not supported"));
    }
  }
  ZYGO_RETURN_IF_ERROR(store.PutBlob(fetched.digest, fetched.bytes));
  ZYGO_RETURN_IF_ERROR(EnsureBlob(store, client, ref, manifest.config, step, progress));
  for (const Descriptor& layer : manifest.layers) {
    ZYGO_RETURN_IF_ERROR(CheckLayerMediaType(layer.media_type));
    ZYGO_RETURN_IF_ERROR(EnsureBlob(store, client, ref, layer, step, progress));
  }
  return MaterializeImage(store, ref.Canonical(), fetched.digest, manifest, step);
}

}  // namespace zygo::images
