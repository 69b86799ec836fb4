// The credential files: Zygo's own auth.json (`zygo login`), docker's config.json and
// containers' auth.json (both read-only).
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/base/status_macros.h"
#include "core/base/sys/atomic_write.h"
#include "core/base/sys/fs.h"
#include "images/registry_client.h"
#include "nlohmann/json.hpp"

namespace zygo::images {

namespace fs = std::filesystem;
namespace sys = ::zygo::base::sys;

namespace {

// The registry a credentials key names: docker writes Docker Hub as
// "https://index.docker.io/v1/"; containers' auth.json may add a repository path.
std::string NormalizeRegistryKey(absl::string_view key) {
  absl::ConsumePrefix(&key, "https://");
  absl::ConsumePrefix(&key, "http://");
  key = key.substr(0, key.find('/'));
  if (key == "index.docker.io" || key == "registry-1.docker.io") return "docker.io";
  return std::string(key);
}

std::string Getenv(const char* name) {
  const char* value = getenv(name);
  return value != nullptr ? value : "";
}

// ${XDG_CONFIG_HOME:-~/.config}/zygo, or empty when neither variable is usable.
std::string ZygoConfigDir() {
  std::string xdg = Getenv("XDG_CONFIG_HOME");
  if (absl::StartsWith(xdg, "/")) return absl::StrCat(xdg, "/zygo");  // relative: ignored (XDG)
  std::string home = Getenv("HOME");
  return home.empty() ? "" : absl::StrCat(home, "/.config/zygo");
}

// Adds the "auths" of one docker-style file to `out`; earlier entries win. A missing file
// adds nothing.
absl::Status MergeAuthFile(const std::string& path, std::map<std::string, Credentials>& out) {
  absl::StatusOr<std::string> text = sys::ReadFile(path);
  if (!text.ok() && sys::ErrnoOf(text.status()) == ENOENT) return absl::OkStatus();
  if (!text.ok()) return text.status();
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object())
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  if (!json.contains("auths") || !json["auths"].is_object()) return absl::OkStatus();
  // Iteration is sorted, so "quay.io" comes before "quay.io/team" and wins.
  for (const auto& [key, entry] : json["auths"].items()) {
    // Entries without "auth" (identity tokens, credential helpers) are out of scope.
    if (!entry.is_object() || !entry.contains("auth") || !entry["auth"].is_string()) continue;
    std::string decoded;
    const std::string& encoded = entry["auth"].get_ref<const std::string&>();
    if (encoded.empty()) continue;
    size_t colon = std::string::npos;
    if (absl::Base64Unescape(encoded, &decoded)) colon = decoded.find(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": auths[\"", key, "\"].auth is not base64 of user:password"));
    }
    out.emplace(NormalizeRegistryKey(key),
                Credentials{decoded.substr(0, colon), decoded.substr(colon + 1)});
  }
  return absl::OkStatus();
}

absl::Status FilesystemError(const std::error_code& error, absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", error.message()));
}

}  // namespace

absl::StatusOr<std::map<std::string, Credentials>> LoadCredentials() {
  std::vector<std::string> paths;
  if (std::string zygo = ZygoConfigDir(); !zygo.empty()) paths.push_back(zygo + "/auth.json");
  if (std::string docker = Getenv("DOCKER_CONFIG"); !docker.empty()) {
    paths.push_back(docker + "/config.json");
  } else if (std::string home = Getenv("HOME"); !home.empty()) {
    paths.push_back(home + "/.docker/config.json");
  }
  if (std::string file = Getenv("REGISTRY_AUTH_FILE"); !file.empty()) {
    paths.push_back(file);
  } else if (std::string runtime = Getenv("XDG_RUNTIME_DIR"); !runtime.empty()) {
    paths.push_back(runtime + "/containers/auth.json");
  }
  std::map<std::string, Credentials> credentials;
  for (const std::string& path : paths) ZYGO_RETURN_IF_ERROR(MergeAuthFile(path, credentials));
  return credentials;
}

absl::Status SaveCredentials(const std::string& registry, const Credentials& credentials) {
  std::string key = NormalizeRegistryKey(registry);
  if (key.empty()) return absl::InvalidArgumentError("zygo login: no registry given");
  if (credentials.username.empty() || absl::StrContains(credentials.username, ':')) {
    return absl::InvalidArgumentError(
        absl::StrCat("zygo login ", key, ": the username must be non-empty and without ':'"));
  }
  std::string dir = ZygoConfigDir();
  if (dir.empty()) {
    return absl::FailedPreconditionError("zygo login: neither XDG_CONFIG_HOME nor HOME is set");
  }
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return FilesystemError(error, absl::StrCat("mkdir -p ", dir));
  fs::permissions(dir, fs::perms::owner_all, error);
  if (error) return FilesystemError(error, absl::StrCat("chmod(", dir, ", 0700)"));
  const std::string path = dir + "/auth.json";
  nlohmann::json json = nlohmann::json::object();
  absl::StatusOr<std::string> text = sys::ReadFile(path);
  if (text.ok()) {
    json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is not a JSON object; fix or remove it"));
    }
  } else if (sys::ErrnoOf(text.status()) != ENOENT) {
    return text.status();
  }
  if (!json.contains("auths") || !json["auths"].is_object())
    json["auths"] = nlohmann::json::object();
  json["auths"][key] = {
      {"auth", absl::Base64Escape(absl::StrCat(credentials.username, ":", credentials.password))}};
  return sys::WriteFileAtomically(path, json.dump(2) + "\n", {.mode = 0600});
}

}  // namespace zygo::images
