// The OCI distribution client: one libcurl easy handle per client (so connections are kept
// alive), the 401 -> challenge -> token -> retry exchange, and sha256 checks while streaming.
// The credential files are in registry_credentials.cc.
#include "images/registry_client.h"

#include <curl/curl.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "images/digest.h"
#include "images/internal/registry_text.h"
#include "images/internal/www_authenticate.h"
#include "images/manifest.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

namespace fs = std::filesystem;
namespace sys = ::zygo::base::sys;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxManifestBytes = 4 << 20;  // the limit containers/image uses
constexpr size_t kMaxSmallBody = 1 << 20;      // token answers; error bodies are cut here
constexpr long kMaxRedirects = 10;
// No total timeout (a layer may be gigabytes on a slow link); a stalled transfer is one
// that moves less than 1 KB/s for a minute.
constexpr long kLowSpeedBytesPerSecond = 1024;
constexpr long kLowSpeedSeconds = 60;
constexpr auto kProgressInterval = std::chrono::milliseconds(100);
// Tokens live at least 60 s (distribution's token spec); renew a little early.
constexpr int64_t kDefaultTokenSeconds = 60;
constexpr int64_t kTokenRenewMarginSeconds = 5;

CURLcode GlobalInit() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return result;
}

// The final response of one request (after redirects). Its body went to the sink when
// the status was 2xx, else into `error_body`.
struct Response {
  long status = 0;
  std::string content_type;
  std::string www_authenticate;
  std::string error_body;
};

// Takes the body of a 2xx response, chunk by chunk; a non-OK Status aborts the transfer.
using BodySink = std::function<absl::Status(absl::string_view)>;

struct Transfer {
  const BodySink* sink;
  Response response;
  absl::Status sink_status;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  absl::string_view line(data, size * count);
  line = absl::StripTrailingAsciiWhitespace(line);
  if (absl::StartsWith(line, "HTTP/")) {
    // A new response starts (after a redirect or a 100): forget the previous one.
    transfer->response = Response{};
    size_t space = line.find(' ');
    if (space != absl::string_view::npos) {
      transfer->response.status =
          strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
    }
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return size * count;
  absl::string_view name = line.substr(0, colon);
  absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
  if (absl::EqualsIgnoreCase(name, "Content-Type")) {
    transfer->response.content_type =
        std::string(absl::StripAsciiWhitespace(value.substr(0, value.find(';'))));
  } else if (absl::EqualsIgnoreCase(name, "WWW-Authenticate")) {
    std::string& all = transfer->response.www_authenticate;
    absl::StrAppend(&all, all.empty() ? "" : ", ", value);
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  absl::string_view chunk(data, size * count);
  if (transfer->response.status >= 200 && transfer->response.status < 300) {
    transfer->sink_status = (*transfer->sink)(chunk);
    return transfer->sink_status.ok() ? chunk.size() : 0;
  }
  std::string& body = transfer->response.error_body;
  absl::StrAppend(&body, chunk.substr(0, kMaxSmallBody - std::min(body.size(), kMaxSmallBody)));
  return chunk.size();
}

bool IsSuccess(const Response& response) { return response.status >= 200 && response.status < 300; }

}  // namespace

// One client is one libcurl handle: use it from one thread at a time.
struct RegistryClient::Impl {
  struct Token {
    std::string value;
    Clock::time_point expires;
  };

  RegistryOptions options;
  CURL* curl = nullptr;
  std::map<std::string, Token> tokens;            // "registry scope" -> token
  std::map<std::string, std::string> repo_scope;  // "registry repository" -> its scope
  std::set<std::string> basic_registries;         // answered a Basic challenge

  ~Impl() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }

  const Credentials* CredentialsFor(const std::string& registry) const {
    std::vector<std::string> names = {registry};
    if (registry == "docker.io") names = {"docker.io", "index.docker.io", "registry-1.docker.io"};
    for (const std::string& name : names) {
      auto it = options.credentials.find(name);
      if (it != options.credentials.end()) return &it->second;
    }
    return nullptr;
  }

  bool Insecure(const Reference& ref) const {
    if (options.plain_http_on_loopback && IsLoopbackRegistry(ref.registry)) return true;
    for (const std::string& registry : options.insecure_registries) {
      if (registry == ref.registry || registry == ref.ApiHost()) return true;
    }
    return false;
  }

  std::string RepositoryUrl(const Reference& ref) const {
    return absl::StrCat(Insecure(ref) ? "http://" : "https://", ref.ApiHost(), "/v2/",
                        ref.repository);
  }

  // One GET on the shared handle. curl_easy_reset keeps the connection cache, so
  // consecutive requests to one registry reuse the connection.
  absl::StatusOr<Response> Perform(const std::string& url, const std::vector<std::string>& headers,
                                   const BodySink& sink) {
    if (GlobalInit() != CURLE_OK || curl == nullptr) {
      return absl::InternalError(absl::StrCat("GET ", url, ": libcurl failed to initialise"));
    }
    curl_easy_reset(curl);
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> list(nullptr, &curl_slist_free_all);
    for (const std::string& header : headers) {
      curl_slist* appended = curl_slist_append(list.get(), header.c_str());
      if (appended == nullptr) return absl::ResourceExhaustedError("curl_slist_append");
      list.release();
      list.reset(appended);
    }
    Transfer transfer{&sink, {}, absl::OkStatus()};
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.get());
    curl_easy_setopt(curl, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // Blobs are often redirected to a CDN. libcurl sends neither our Authorization header
    // nor credentials to another host, port or scheme (since 7.83) unless
    // CURLOPT_UNRESTRICTED_AUTH is set, which it must never be here.
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, kMaxRedirects);
    curl_easy_setopt(curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, kLowSpeedBytesPerSecond);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `error` goes out of scope
    if (!transfer.sink_status.ok()) return transfer.sink_status;
    if (rc != CURLE_OK) {
      return absl::UnavailableError(
          absl::StrCat("GET ", url, ": ", error[0] != '\0' ? error : curl_easy_strerror(rc)));
    }
    return std::move(transfer.response);
  }

  // The error for a registry or token server that said no to whatever we sent.
  absl::Status Refused(const Reference& ref) const {
    const Credentials* credentials = CredentialsFor(ref.registry);
    return absl::UnauthenticatedError(absl::StrCat(
        ref.registry,
        credentials != nullptr ? absl::StrCat(" rejected the credentials of ",
                                              credentials->username, " for ", ref.repository)
                               : absl::StrCat(" refused anonymous access to ", ref.repository,
                                              " (private, or not there)"),
        LoginHint(ref.registry)));
  }

  std::optional<std::string> AuthorizationFor(const Reference& ref) const {
    auto scope = repo_scope.find(absl::StrCat(ref.registry, " ", ref.repository));
    if (scope != repo_scope.end()) {
      auto token = tokens.find(absl::StrCat(ref.registry, " ", scope->second));
      if (token != tokens.end() && Clock::now() < token->second.expires) {
        return absl::StrCat("Authorization: Bearer ", token->second.value);
      }
    }
    const Credentials* credentials = CredentialsFor(ref.registry);
    if (basic_registries.count(ref.registry) != 0 && credentials != nullptr) {
      return BasicAuthorization(*credentials);
    }
    return std::nullopt;
  }

  absl::StatusOr<std::string> TokenUrl(const Reference& ref,
                                       const internal::AuthChallenge& challenge,
                                       const std::string& scope) const {
    auto realm = challenge.params.find("realm");
    if (realm == challenge.params.end() || realm->second.empty()) {
      return absl::UnauthenticatedError(
          absl::StrCat(ref.registry, " sent a Bearer challenge without a realm"));
    }
    // Credentials must not cross the network in clear unless the caller allowed plain HTTP.
    if (!absl::StartsWith(realm->second, "https://") &&
        !(Insecure(ref) && absl::StartsWith(realm->second, "http://"))) {
      return absl::UnauthenticatedError(
          absl::StrCat(ref.registry, ": refusing the token realm ", realm->second, " (not https)"));
    }
    std::string url = realm->second;
    char separator = absl::StrContains(url, '?') ? '&' : '?';
    auto add = [&](const char* name, const std::string& value) {
      char* escaped = curl_easy_escape(curl, value.c_str(), static_cast<int>(value.size()));
      absl::StrAppend(&url, std::string(1, separator), name, "=", escaped ? escaped : "");
      curl_free(escaped);
      separator = '&';
    };
    auto service = challenge.params.find("service");
    if (service != challenge.params.end()) add("service", service->second);
    add("scope", scope);
    return url;
  }

  // GETs a token from the challenge's realm (with Basic credentials when we have them for
  // this registry) and caches it under the scope.
  absl::Status FetchToken(const Reference& ref, const internal::AuthChallenge& challenge) {
    auto scope_param = challenge.params.find("scope");
    std::string scope = scope_param != challenge.params.end()
                            ? scope_param->second
                            : absl::StrCat("repository:", ref.repository, ":pull");
    ZYGO_ASSIGN_OR_RETURN(std::string url, TokenUrl(ref, challenge, scope));
    std::vector<std::string> headers;
    const Credentials* credentials = CredentialsFor(ref.registry);
    if (credentials != nullptr) headers.push_back(BasicAuthorization(*credentials));
    std::string body;
    BodySink sink = [&](absl::string_view chunk) {
      if (body.size() + chunk.size() > kMaxSmallBody) {
        return absl::ResourceExhaustedError(absl::StrCat("token answer from ", url, " too large"));
      }
      absl::StrAppend(&body, chunk);
      return absl::OkStatus();
    };
    ZYGO_ASSIGN_OR_RETURN(Response response, Perform(url, headers, sink));
    if (response.status == 401) return Refused(ref);
    if (response.status == 403) {
      return absl::PermissionDeniedError(absl::StrCat(ref.registry, ": access to ", ref.repository,
                                                      " denied by the token server (HTTP 403)"));
    }
    if (!IsSuccess(response)) {
      return absl::UnavailableError(absl::StrCat(ref.registry, ": token server answered HTTP ",
                                                 response.status, " for ", ref.repository));
    }
    nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    std::string token;
    int64_t seconds = kDefaultTokenSeconds;
    if (json.is_object()) {
      for (const char* key : {"token", "access_token"}) {
        if (token.empty() && json.contains(key) && json[key].is_string()) token = json[key];
      }
      if (json.contains("expires_in") && json["expires_in"].is_number_integer()) {
        seconds = std::max<int64_t>(json["expires_in"].get<int64_t>(), kDefaultTokenSeconds);
      }
    }
    if (token.empty()) {
      return absl::UnauthenticatedError(
          absl::StrCat(ref.registry, ": the token server's answer has no token"));
    }
    tokens[absl::StrCat(ref.registry, " ", scope)] = {
        token, Clock::now() + std::chrono::seconds(seconds - kTokenRenewMarginSeconds)};
    repo_scope[absl::StrCat(ref.registry, " ", ref.repository)] = scope;
    return absl::OkStatus();
  }

  // Answers a 401: gets a token (Bearer) or decides to send Basic credentials.
  absl::Status Authenticate(const Reference& ref, const Response& response) {
    if (response.www_authenticate.empty()) {
      return absl::UnauthenticatedError(
          absl::StrCat(ref.registry, " answered 401 without a challenge", LoginHint(ref.registry)));
    }
    ZYGO_ASSIGN_OR_RETURN(std::vector<internal::AuthChallenge> challenges,
                          internal::ParseWwwAuthenticate(response.www_authenticate));
    for (const internal::AuthChallenge& challenge : challenges) {
      if (challenge.scheme == "bearer") return FetchToken(ref, challenge);
    }
    for (const internal::AuthChallenge& challenge : challenges) {
      if (challenge.scheme != "basic") continue;
      const Credentials* credentials = CredentialsFor(ref.registry);
      if (credentials == nullptr) {
        return absl::UnauthenticatedError(
            absl::StrCat(ref.registry, " requires authentication", LoginHint(ref.registry)));
      }
      // Already sending them: they are wrong.
      if (!basic_registries.insert(ref.registry).second) return Refused(ref);
      return absl::OkStatus();
    }
    return absl::UnauthenticatedError(absl::StrCat(
        ref.registry, ": unsupported authentication scheme '", challenges[0].scheme, "'"));
  }

  // GET with authentication: on a 401, authenticate and try once more.
  absl::StatusOr<Response> Get(const Reference& ref, const std::string& url,
                               std::vector<std::string> headers, const BodySink& sink) {
    for (int attempt = 0;; ++attempt) {
      std::vector<std::string> with_auth = headers;
      std::optional<std::string> authorization = AuthorizationFor(ref);
      if (authorization.has_value()) with_auth.push_back(*authorization);
      ZYGO_ASSIGN_OR_RETURN(Response response, Perform(url, with_auth, sink));
      if (response.status != 401) return response;
      if (attempt == 1) return Refused(ref);
      ZYGO_RETURN_IF_ERROR(Authenticate(ref, response));
    }
  }

  // The Status for a final non-2xx response; `what` names the manifest or blob.
  static absl::Status ErrorFor(const Response& response, const std::string& kind,
                               const std::string& what) {
    std::string detail = RegistryErrorDetail(response.error_body);
    switch (response.status) {
      case 403:
        return absl::PermissionDeniedError(
            absl::StrCat("access to ", what, " denied (HTTP 403)", detail));
      case 404:
        return absl::NotFoundError(absl::StrCat(kind, " unknown: ", what));
      default:
        return absl::UnavailableError(
            absl::StrCat("registry answered HTTP ", response.status, " for ", what, detail));
    }
  }
};

RegistryClient::RegistryClient(RegistryOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (GlobalInit() == CURLE_OK) impl_->curl = curl_easy_init();
}

RegistryClient::~RegistryClient() = default;
RegistryClient::RegistryClient(RegistryClient&&) noexcept = default;
RegistryClient& RegistryClient::operator=(RegistryClient&&) noexcept = default;

absl::StatusOr<FetchedManifest> RegistryClient::GetManifest(const Reference& ref,
                                                            const std::string& tag_or_digest) {
  const bool by_digest = IsDigestForm(tag_or_digest);
  const std::string what =
      absl::StrCat(ref.registry, "/", ref.repository, by_digest ? "@" : ":", tag_or_digest);
  if (absl::Status status = CheckTagOrDigest(tag_or_digest); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", status.message()));
  }
  std::string body;
  BodySink sink = [&](absl::string_view chunk) {
    if (body.size() + chunk.size() > kMaxManifestBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("manifest ", what, " is larger than ", kMaxManifestBytes, " bytes"));
    }
    absl::StrAppend(&body, chunk);
    return absl::OkStatus();
  };
  ZYGO_ASSIGN_OR_RETURN(
      Response response,
      impl_->Get(ref, absl::StrCat(impl_->RepositoryUrl(ref), "/manifests/", tag_or_digest),
                 {absl::StrCat("Accept: ", ManifestAcceptHeader())}, sink));
  if (!IsSuccess(response)) return Impl::ErrorFor(response, "manifest", what);
  FetchedManifest manifest;
  manifest.digest = Sha256Digest(body);
  if (by_digest && manifest.digest != tag_or_digest) {
    return absl::DataLossError(
        absl::StrCat("manifest digest mismatch for ", what, ": got ", manifest.digest));
  }
  manifest.bytes = std::move(body);
  manifest.media_type = std::move(response.content_type);
  return manifest;
}

absl::Status RegistryClient::DownloadBlob(const Reference& ref, const std::string& digest,
                                          int64_t size, const std::string& dest_file,
                                          const ProgressFn& progress) {
  const std::string what = absl::StrCat(ref.registry, "/", ref.repository, "@", digest);
  if (absl::Status status = ValidateDigest(digest); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", status.message()));
  }
  bool opened = false;  // so that a failed open never removes what was already there
  absl::Status status = [&]() -> absl::Status {
    ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd,
                          sys::OpenWriteOnly(dest_file, sys::IfMissing::kCreate));
    opened = true;
    Sha256Hasher hasher;
    int64_t received = 0;
    Clock::time_point last_progress = Clock::now();
    BodySink sink = [&](absl::string_view chunk) -> absl::Status {
      received += static_cast<int64_t>(chunk.size());
      if (size >= 0 && received > size) {
        return absl::DataLossError(
            absl::StrCat("blob ", what, " is larger than the expected ", size, " bytes"));
      }
      hasher.Update(chunk.data(), chunk.size());
      while (!chunk.empty()) {
        ZYGO_ASSIGN_OR_RETURN(size_t written, sys::WriteOnce(fd, chunk, dest_file));
        if (written == 0) return absl::InternalError(absl::StrCat("write(", dest_file, "): 0"));
        chunk.remove_prefix(written);
      }
      if (progress && Clock::now() - last_progress >= kProgressInterval) {
        last_progress = Clock::now();
        progress(received, size);
      }
      return absl::OkStatus();
    };
    ZYGO_ASSIGN_OR_RETURN(
        Response response,
        impl_->Get(ref, absl::StrCat(impl_->RepositoryUrl(ref), "/blobs/", digest), {}, sink));
    if (!IsSuccess(response)) return Impl::ErrorFor(response, "blob", what);
    if (size >= 0 && received != size) {
      return absl::DataLossError(
          absl::StrCat("blob ", what, " is ", received, " bytes, expected ", size));
    }
    std::string got = hasher.Finish();
    if (got != digest) {
      return absl::DataLossError(absl::StrCat("blob digest mismatch for ", what, ": got ", got));
    }
    if (progress) progress(received, size);
    return absl::OkStatus();
  }();
  if (!status.ok() && opened) {
    std::error_code ignored;  // the download's error is the one to report
    fs::remove(dest_file, ignored);
  }
  return status;
}

}  // namespace zygo::images
