#include "images/internal/registry_text.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "images/digest.h"
#include "nlohmann/json.hpp"

namespace zygo::images {

std::string RegistryErrorDetail(const std::string& body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("errors") || !json["errors"].is_array() ||
      json["errors"].empty() || !json["errors"][0].is_object()) {
    return "";
  }
  const nlohmann::json& first = json["errors"][0];
  std::string code = first.value("code", "");
  std::string message = first.value("message", "");
  if (code.empty() && message.empty()) return "";
  return absl::StrCat(" (", code, code.empty() || message.empty() ? "" : ": ", message, ")");
}

bool IsDigestForm(absl::string_view tag_or_digest) { return absl::StrContains(tag_or_digest, ':'); }

absl::Status CheckTagOrDigest(absl::string_view tag_or_digest) {
  if (IsDigestForm(tag_or_digest)) return ValidateDigest(tag_or_digest);
  bool valid = !tag_or_digest.empty() && tag_or_digest.size() <= 128 && tag_or_digest[0] != '.' &&
               tag_or_digest[0] != '-';
  for (char c : tag_or_digest) {
    valid = valid && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                      c == '-');
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("invalid tag '", tag_or_digest, "'"));
}

std::string BasicAuthorization(const Credentials& credentials) {
  return absl::StrCat(
      "Authorization: Basic ",
      absl::Base64Escape(absl::StrCat(credentials.username, ":", credentials.password)));
}

std::string LoginHint(const std::string& registry) {
  return absl::StrCat(": run zygo login ", registry);
}

}  // namespace zygo::images
