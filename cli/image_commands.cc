#include "cli/image_commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "images/reference.h"
#include "images/store.h"
#include "images/system_layer.h"
#include "images/venv_cache.h"
#include "runtime/image_pull.h"

namespace zygo::cli {
namespace {

// How derived roots (the bytecode layer) are named after their image.
constexpr char kDerivedMarker[] = "+bytecode.";

int Fail(const absl::Status& status) {
  fprintf(stderr, "zygo: %s\n", std::string(status.message()).c_str());
  return 125;
}

std::string HumanSize(int64_t bytes) {
  if (bytes >= (1LL << 30)) return absl::StrFormat("%.1fGB", bytes / 1e9);
  if (bytes >= (1LL << 20)) return absl::StrFormat("%.1fMB", bytes / 1e6);
  return absl::StrFormat("%.1fkB", bytes / 1e3);
}

}  // namespace

int ImagesCommand(int argc, char** argv) {
  if (argc > 0) return Fail(absl::InvalidArgumentError("usage: zygo images"));
  absl::StatusOr<images::Store> store = images::Store::Open(images::Store::DefaultRoot());
  if (!store.ok()) return Fail(store.status());
  absl::StatusOr<std::vector<images::ImageRecord>> records = store->List();
  if (!records.ok()) return Fail(records.status());
  printf("%-48s %-19s %-10s %s\n", "IMAGE", "DIGEST", "SIZE", "ADDED");
  for (const images::ImageRecord& record : *records) {
    absl::StatusOr<images::Reference> ref = images::ParseReference(record.reference);
    char added[32] = "-";
    time_t when = static_cast<time_t>(record.created_unix);
    strftime(added, sizeof(added), "%Y-%m-%d %H:%M", localtime(&when));
    printf("%-48s %-19s %-10s %s\n", (ref.ok() ? ref->Familiar() : record.reference).c_str(),
           record.manifest_digest.substr(0, 19).c_str(), HumanSize(record.size_bytes).c_str(),
           added);
  }
  return 0;
}

int RmiCommand(int argc, char** argv) {
  if (argc < 1) return Fail(absl::InvalidArgumentError("usage: zygo rmi REF [REF...]"));
  absl::StatusOr<images::Store> store = images::Store::Open(images::Store::DefaultRoot());
  if (!store.ok()) return Fail(store.status());
  for (int i = 0; i < argc; ++i) {
    // "<image>+bytecode.<key>" names a derived root: it is removed as written.
    std::string text = argv[i];
    size_t derived = text.find(kDerivedMarker);
    absl::StatusOr<images::Reference> ref = images::ParseReference(text.substr(0, derived));
    if (!ref.ok()) return Fail(ref.status());
    std::string canonical = ref->Canonical();
    if (derived != std::string::npos) canonical += text.substr(derived);
    absl::Status removed = store->Remove(canonical);
    if (!removed.ok()) return Fail(removed);
    printf("untagged %s\n", text.c_str());
    if (derived != std::string::npos) continue;
    // An image's derived roots go with it, or they would keep its layers from a prune.
    absl::StatusOr<std::vector<images::ImageRecord>> records = store->List();
    if (!records.ok()) return Fail(records.status());
    for (const images::ImageRecord& record : *records) {
      if (record.reference.rfind(canonical + kDerivedMarker, 0) != 0) continue;
      absl::Status gone = store->Remove(record.reference);
      if (!gone.ok()) return Fail(gone);
      printf("untagged %s\n", record.reference.c_str());
    }
  }
  fprintf(stderr, "layers stay until `zygo image prune`\n");
  return 0;
}

int ImagePruneCommand(int argc, char** argv) {
  if (argc > 0) return Fail(absl::InvalidArgumentError("usage: zygo image prune"));
  absl::StatusOr<images::Store> store = images::Store::Open(images::Store::DefaultRoot());
  if (!store.ok()) return Fail(store.status());
  absl::StatusOr<int64_t> freed = store->Prune();
  if (!freed.ok()) return Fail(freed.status());
  // Venvs and system layers belong to images: those of images no longer recorded go too.
  absl::StatusOr<std::vector<images::ImageRecord>> records = store->List();
  if (!records.ok()) return Fail(records.status());
  std::set<std::string> live;
  for (const images::ImageRecord& record : *records) live.insert(record.manifest_digest);
  absl::StatusOr<int64_t> venvs = images::PruneVenvs(*store, live);
  if (!venvs.ok()) return Fail(venvs.status());
  absl::StatusOr<int64_t> system = images::PruneSystemLayers(*store, live);
  if (!system.ok()) return Fail(system.status());
  printf("freed %s\n", HumanSize(*freed + *venvs + *system).c_str());
  return 0;
}

int ForwardToImageTool(const char* command, int argc, char** argv) {
  absl::StatusOr<std::string> tool = runtime::ImageToolPath();
  if (!tool.ok()) return Fail(tool.status());
  std::vector<char*> args = {tool->data(), const_cast<char*>(command)};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(tool->c_str(), args.data());
  return Fail(absl::InternalError(absl::StrCat("exec ", *tool, ": ", strerror(errno))));
}

}  // namespace zygo::cli
