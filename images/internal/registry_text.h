// The registry client's small text helpers: error details from a registry's JSON body,
// tag checks, the Basic header and the login hint. Internal to images:registry_client.
#ifndef ZYGO_IMAGES_INTERNAL_REGISTRY_TEXT_H_
#define ZYGO_IMAGES_INTERNAL_REGISTRY_TEXT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "images/registry_client.h"

namespace zygo::images {

// " (MANIFEST_UNKNOWN: manifest unknown)" from the registry's JSON error body, if any.
std::string RegistryErrorDetail(const std::string& body);

bool IsDigestForm(absl::string_view tag_or_digest);

// Tags as the distribution spec allows them: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. Checked
// because the tag becomes part of a URL.
absl::Status CheckTagOrDigest(absl::string_view tag_or_digest);

std::string BasicAuthorization(const Credentials& credentials);

// ": run zygo login REGISTRY", to end an authentication error.
std::string LoginHint(const std::string& registry);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_INTERNAL_REGISTRY_TEXT_H_
