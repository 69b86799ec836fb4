// Writing the pools' specs and registering them through the API client.
#include "cli/mcp_pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/zygo/api_client.h"

namespace zygo::cli::mcp {
namespace {

using nlohmann::json;

// A TOML basic string: its JSON form is one (the escapes JSON writes are TOML's too).
std::string TomlString(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// FNV-1a: stable across builds and hosts, which is all the origin's hash needs.
uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

PoolSpec MakePoolSpec(const PoolOptions& options, Language language) {
  const bool python = language == Language::kPython;
  PoolSpec spec;
  const std::string& named = python ? options.python_pool : options.node_pool;
  if (!named.empty()) {
    spec.name = named;
    return spec;
  }
  spec.owned = true;
  spec.name = absl::StrCat(options.prefix, python ? "-python" : "-node");
  spec.toml = absl::StrCat(
      "# Written by `zygo mcp`: the runtime pool its ", python ? "run_python" : "run_javascript",
      " tool runs code in (docs/mcp.md).\n", "name = ", TomlString(spec.name), "\n",
      "runtime = ", python ? "\"python\"" : "\"node\"", "\n", "pool = true\n",
      "code = ", TomlString(options.code_dir), "\n\n", "[limits]\n",
      "memory = ", TomlString(options.memory), "\n", "timeout = ", TomlString(options.timeout),
      "\n", "pids = ", options.pids, "\n\n", "[net]\n", "mode = ", TomlString(options.net_mode),
      "\n");
  if (!options.allow.empty()) {
    std::string list;
    for (const std::string& host : options.allow) {
      absl::StrAppend(&list, list.empty() ? "" : ", ", TomlString(host));
    }
    absl::StrAppend(&spec.toml, "allow = [", list, "]\n");
  }
  spec.origin = absl::StrFormat("zygo-mcp-%s-%016x.toml", python ? "python" : "node",
                                Fnv1a(spec.toml));
  return spec;
}

std::string DefaultCodeDir() {
  if (geteuid() == 0) return "/var/lib/zygo/mcp/code";
  if (const char* state = getenv("XDG_STATE_HOME"); state != nullptr && state[0] == '/') {
    return absl::StrCat(state, "/zygo/mcp/code");
  }
  const char* home = getenv("HOME");
  return absl::StrCat(home != nullptr ? home : "", "/.local/state/zygo/mcp/code");
}

PoolKeeper::PoolKeeper(std::string socket_path, const PoolOptions& options)
    : socket_path_(std::move(socket_path)), code_dir_(options.code_dir) {
  python_.spec = MakePoolSpec(options, Language::kPython);
  node_.spec = MakePoolSpec(options, Language::kJavaScript);
}

const std::string& PoolKeeper::Name(Language language) const {
  return language == Language::kPython ? python_.spec.name : node_.spec.name;
}

void PoolKeeper::Forget(Language language) {
  std::lock_guard<std::mutex> lock(mu_);
  Of(language).ensured = false;
}

absl::Status PoolKeeper::Ensure(Language language) {
  std::lock_guard<std::mutex> lock(mu_);
  Pool& pool = Of(language);
  if (pool.ensured || !pool.spec.owned) return absl::OkStatus();
  sdk::ApiClient client(socket_path_);
  absl::StatusOr<json> list = client.Call({"GET", "/v1/functions", "", ""});
  if (!list.ok()) return list.status();
  if (auto functions = list->find("functions");
      functions != list->end() && functions->is_array()) {
    for (const json& function : *functions) {
      // The same spec already registered: registering it again would restart its
      // zygote under another zygo mcp's running calls.
      if (function.value("name", "") == pool.spec.name &&
          function.value("spec_path", "") == pool.spec.origin && function.value("pool", false)) {
        pool.ensured = true;
        return absl::OkStatus();
      }
    }
  }
  absl::StatusOr<json> up = client.Call(
      {"POST",
       absl::StrCat("/v1/functions?origin=", sdk::ApiClient::Escape(pool.spec.origin),
                    "&base_dir=", sdk::ApiClient::Escape(code_dir_)),
       pool.spec.toml, "application/toml"});
  if (!up.ok()) return up.status();
  pool.ensured = true;
  return absl::OkStatus();
}

absl::Status PoolKeeper::WaitWarm(Language language, absl::Duration limit) {
  const std::string& name = Name(language);
  const absl::Time deadline = absl::Now() + limit;
  sdk::ApiClient client(socket_path_);
  while (true) {
    absl::StatusOr<json> list = client.Call({"GET", "/v1/functions", "", ""});
    if (!list.ok()) return list.status();
    const json* found = nullptr;
    if (auto functions = list->find("functions");
        functions != list->end() && functions->is_array()) {
      for (const json& function : *functions) {
        if (function.value("name", "") == name) found = &function;
      }
    }
    if (found == nullptr) {
      return absl::NotFoundError(absl::StrCat("the supervisor has no pool named ", name));
    }
    if (found->value("warm_ups", 0) > 0 || found->value("state", "") == "warm") {
      return absl::OkStatus();
    }
    std::string error = found->value("error", "");
    if (found->value("state", "") != "warming" && !error.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(name, " cannot warm: ", error));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(name, " did not warm within ",
                                                      absl::FormatDuration(limit)));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace zygo::cli::mcp
