#include "sdk/cpp/zygo/client.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "absl/strings/str_cat.h"
#include "core/base/sys/fs.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/socket_path.h"

namespace zygo::sdk {
namespace {

using nlohmann::json;

std::string TextOf(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

Function ToFunction(const json& info) {
  Function function;
  function.name = TextOf(info, "name");
  function.image = TextOf(info, "image");
  function.runtime = TextOf(info, "runtime");
  function.entry = TextOf(info, "entry");
  function.pool = info.value("pool", false);
  function.state = TextOf(info, "state");
  function.requests = info.value("requests", int64_t{0});
  function.progress = TextOf(info, "progress");
  function.error = TextOf(info, "error");
  function.warm_ups = info.value("warm_ups", int64_t{0});
  function.warm_ms = info.value("warm_ms", 0.0);
  function.forked = info.value("forked", false);
  return function;
}

Result ToResult(const json& reply) {
  Result result;
  result.ok = reply.value("ok", false);
  auto value = reply.find("result");
  result.result_json = value == reply.end() ? "null" : value->dump();
  result.stdout_data = TextOf(reply, "stdout");
  result.stderr_data = TextOf(reply, "stderr");
  if (auto error = reply.find("error"); error != reply.end() && error->is_object()) {
    result.error_type = TextOf(*error, "type");
    result.error_message = TextOf(*error, "message");
    result.traceback = TextOf(*error, "traceback");
  }
  if (auto outcome = reply.find("outcome"); outcome != reply.end() && outcome->is_object()) {
    result.status = TextOf(*outcome, "status");
    result.exit_code = outcome->value("exit_code", 0);
    result.wall_ms = outcome->value("wall_ms", 0.0);
    result.timed_out = outcome->value("timed_out", false);
    result.oom_killed = outcome->value("oom_killed", false);
  }
  return result;
}

}  // namespace

Client::Client(absl::string_view socket_path) : api_(ResolveSocketPath(socket_path)) {}

absl::StatusOr<Function> Client::Up(absl::string_view toml, absl::string_view base_dir,
                                    absl::string_view origin) {
  absl::StatusOr<json> info =
      api_.Call({"POST",
                 absl::StrCat("/v1/functions?origin=", ApiClient::Escape(origin),
                              "&base_dir=", ApiClient::Escape(base_dir)),
                 std::string(toml), "application/toml"});
  if (!info.ok()) return info.status();
  return ToFunction(*info);
}

absl::StatusOr<Function> Client::UpFile(const std::string& path) {
  absl::StatusOr<std::string> toml = base::sys::ReadFile(path);
  if (!toml.ok()) {
    const int err = base::sys::ErrnoOf(toml.status()).value_or(EIO);
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", strerror(err)));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  char base_dir[PATH_MAX];
  if (realpath(dir.c_str(), base_dir) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot resolve ", dir, ": ", strerror(errno)));
  }
  return Up(*toml, base_dir, path.substr(slash + 1));  // npos + 1 == 0
}

absl::Status Client::Down(absl::string_view name) {
  return api_.Call({"DELETE", absl::StrCat("/v1/functions/", ApiClient::Escape(name))}).status();
}

absl::StatusOr<std::vector<Function>> Client::List() {
  absl::StatusOr<json> reply = api_.Call({"GET", "/v1/functions"});
  if (!reply.ok()) return reply.status();
  auto functions = reply->find("functions");
  if (functions == reply->end() || !functions->is_array()) {
    return absl::InternalError("the supervisor's function list has no \"functions\" array");
  }
  std::vector<Function> list;
  for (const json& info : *functions) list.push_back(ToFunction(info));
  return list;
}

absl::StatusOr<Result> Client::Exec(absl::string_view name, absl::string_view event_json) {
  return Post(name, "", event_json, "application/json");
}

absl::StatusOr<Result> Client::ExecWithStdin(absl::string_view name, absl::string_view stdin_data) {
  return Post(name, "", stdin_data, "application/octet-stream");
}

absl::StatusOr<std::string> Client::PutScript(absl::string_view source) {
  absl::StatusOr<json> reply = api_.Call({"PUT", "/v1/scripts", std::string(source), "text/plain"});
  if (!reply.ok()) return reply.status();
  const std::string digest = TextOf(*reply, "digest");
  if (digest.empty())
    return absl::InternalError("the supervisor stored the script but sent no digest");
  return digest;
}

absl::StatusOr<Result> Client::ExecScript(absl::string_view pool, absl::string_view digest,
                                          absl::string_view event_json) {
  return Post(pool, absl::StrCat("?script=", ApiClient::Escape(digest)), event_json,
              "application/json");
}

absl::StatusOr<Result> Client::RunScript(absl::string_view pool, absl::string_view source,
                                         absl::string_view event_json) {
  absl::StatusOr<std::string> digest = PutScript(source);
  if (!digest.ok()) return digest.status();
  return ExecScript(pool, *digest, event_json);
}

absl::Status Client::Health() { return api_.Call({"GET", "/v1/health"}).status(); }

absl::StatusOr<Result> Client::Post(absl::string_view name, absl::string_view query,
                                    absl::string_view body, absl::string_view content_type) {
  absl::StatusOr<json> reply =
      api_.Call({"POST", absl::StrCat("/v1/functions/", ApiClient::Escape(name), "/exec", query),
                 std::string(body), std::string(content_type)});
  if (!reply.ok()) return reply.status();
  return ToResult(*reply);
}

}  // namespace zygo::sdk
