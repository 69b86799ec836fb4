// `zygo-image`: the image commands that need the network or archive code (libcurl,
// libarchive): pull, load, login. `zygo` runs it for `zygo pull/load/login` and for a
// `zygo run` of an image not yet in the store, so the one-shot path stays a small
// static binary. Exit codes: 0, or 125 with one line naming the problem.
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/image_progress.h"
#include "images/loader.h"
#include "images/puller.h"
#include "images/reference.h"
#include "images/registry_client.h"
#include "images/store.h"

namespace {

using zygo::images::Store;

constexpr char kUsage[] = R"(Usage:
  zygo pull [--tls-verify=false|true] [--progress=lines] REF
  zygo load PATH [NAME]
  zygo login [-u USER] [--password-stdin] REGISTRY

A registry on loopback (localhost, 127.0.0.0/8, [::1]) is reached over plain HTTP, as
docker does, and every other over HTTPS; --tls-verify=false is plain HTTP for any
registry, --tls-verify=true HTTPS for every one. --progress=lines prints each step of a
pull as a line of its own, also when stderr is not a terminal.

The store is $ZYGO_HOME (or `zygo --root DIR`), else ~/.local/share/zygo
(/var/lib/zygo for root).
)";

int Fail(const absl::Status& status) {
  fprintf(stderr, "zygo: %s\n", std::string(status.message()).c_str());
  return 125;
}

absl::StatusOr<Store> OpenStore() { return Store::Open(Store::DefaultRoot()); }

int Pull(int argc, char** argv) {
  zygo::images::TlsVerify tls_verify = zygo::images::TlsVerify::kDefault;
  std::string ref_text;
  bool progress_lines = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--progress=lines") {
      progress_lines = true;
    } else if (arg == "--tls-verify=false") {
      tls_verify = zygo::images::TlsVerify::kFalse;
    } else if (arg == "--tls-verify=true" || arg == "--tls-verify") {
      tls_verify = zygo::images::TlsVerify::kTrue;
    } else if (!arg.empty() && arg[0] == '-') {
      return Fail(absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, " for pull")));
    } else if (ref_text.empty()) {
      ref_text = arg;
    } else {
      return Fail(absl::InvalidArgumentError("pull takes one image reference"));
    }
  }
  if (ref_text.empty()) return Fail(absl::InvalidArgumentError("usage: zygo pull REF"));
  absl::StatusOr<zygo::images::Reference> ref = zygo::images::ParseReference(ref_text);
  if (!ref.ok()) return Fail(ref.status());
  absl::StatusOr<Store> store = OpenStore();
  if (!store.ok()) return Fail(store.status());
  zygo::images::RegistryOptions options;
  if (tls_verify == zygo::images::TlsVerify::kFalse) {
    options.insecure_registries.push_back(ref->registry);
  }
  options.plain_http_on_loopback = tls_verify != zygo::images::TlsVerify::kTrue;
  absl::StatusOr<std::map<std::string, zygo::images::Credentials>> credentials =
      zygo::images::LoadCredentials();
  if (!credentials.ok()) return Fail(credentials.status());
  options.credentials = *credentials;
  zygo::images::RegistryClient client(options);
  zygo::cli::ImageProgress progress(progress_lines);
  absl::StatusOr<zygo::images::ImageRecord> record = zygo::images::PullImage(
      *store, client, *ref, [&](const std::string& step) { progress.Step(step); },
      [&](int64_t done, int64_t total) { progress.Bytes(done, total); });
  progress.Done();
  if (!record.ok()) return Fail(record.status());
  fprintf(stderr, "pulled %s (%s)\n", ref->Familiar().c_str(), record->manifest_digest.c_str());
  return 0;
}

int Load(int argc, char** argv) {
  if (argc < 1 || argc > 2 || argv[0][0] == '-') {
    return Fail(absl::InvalidArgumentError("usage: zygo load PATH [NAME]"));
  }
  absl::StatusOr<Store> store = OpenStore();
  if (!store.ok()) return Fail(store.status());
  zygo::cli::ImageProgress progress;
  absl::StatusOr<std::vector<zygo::images::ImageRecord>> records =
      zygo::images::LoadImages(*store, argv[0], argc == 2 ? argv[1] : "",
                               [&](const std::string& step) { progress.Step(step); });
  progress.Done();
  if (!records.ok()) return Fail(records.status());
  for (const auto& record : *records) {
    fprintf(stderr, "loaded %s (%s)\n", record.reference.c_str(), record.manifest_digest.c_str());
  }
  return 0;
}

std::string ReadPassword(bool from_stdin) {
  std::string password;
  if (from_stdin || isatty(STDIN_FILENO) != 1) {
    std::getline(std::cin, password);
    return password;
  }
  fprintf(stderr, "Password: ");
  struct termios saved, quiet;
  tcgetattr(STDIN_FILENO, &saved);
  quiet = saved;
  quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  std::getline(std::cin, password);
  tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  fprintf(stderr, "\n");
  return password;
}

int Login(int argc, char** argv) {
  std::string user, registry;
  bool password_stdin = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "-u" || arg == "--username") && i + 1 < argc) {
      user = argv[++i];
    } else if (arg == "--password-stdin") {
      password_stdin = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return Fail(absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, " for login")));
    } else {
      registry = arg;
    }
  }
  if (registry.empty()) {
    return Fail(absl::InvalidArgumentError("usage: zygo login [-u USER] REGISTRY"));
  }
  if (user.empty()) {
    fprintf(stderr, "Username: ");
    std::getline(std::cin, user);
  }
  std::string password = ReadPassword(password_stdin);
  absl::Status saved = zygo::images::SaveCredentials(registry, {user, password});
  if (!saved.ok()) return Fail(saved);
  fprintf(stderr, "credentials for %s saved\n", registry.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 125 : 0;
  }
  std::string command = argv[1];
  if (command == "pull") return Pull(argc - 2, argv + 2);
  if (command == "load") return Load(argc - 2, argv + 2);
  if (command == "login") return Login(argc - 2, argv + 2);
  fprintf(stderr, "zygo-image: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 125;
}
