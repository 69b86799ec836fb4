// `zygo pull`: fetches an image's manifest (choosing this host's platform from an
// index), config and layers into the store, then materializes it. Every blob is
// checked against its digest; blobs and layers already in the store are not fetched
// again. Parent side.
#ifndef ZYGO_IMAGES_PULLER_H_
#define ZYGO_IMAGES_PULLER_H_

#include "absl/status/statusor.h"
#include "images/materialize.h"
#include "images/reference.h"
#include "images/registry_client.h"
#include "images/store.h"

namespace zygo::images {

absl::StatusOr<ImageRecord> PullImage(Store& store, RegistryClient& client, const Reference& ref,
                                      const StepFn& step, const ProgressFn& progress);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_PULLER_H_
