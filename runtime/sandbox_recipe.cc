#include "runtime/sandbox_recipe.h"

#include <stdlib.h>

#include <memory>
#include <utility>

#include "core/base/helper_binary.h"
#include "core/base/status_macros.h"
#include "images/build_sandbox.h"
#include "images/store.h"
#include "net/network_helper.h"
#include "runtime/system_packages.h"

namespace zygo::runtime {
namespace {

// The runner of a system-package build's jobs: the job as a one-shot sandbox
// (images/build_sandbox.h) launched through this recipe, so a job with an allowlist gets
// the same egress network as `zygo run --net egress` (nftables, Zygo's resolver, pasta).
images::SandboxRunner NetworkedJobRunner(const NetworkHost& host) {
  return [host](const images::SandboxJob& job) {
    return images::RunSandboxJobWith(
        job,
        [&host](const core::Spec& spec, core::CgroupDriver* cgroups,
                const core::LaunchOptions& options) -> absl::StatusOr<core::Outcome> {
          ZYGO_ASSIGN_OR_RETURN(Sandbox sandbox, PlanSandbox(spec, host));
          return LaunchSandbox(sandbox, cgroups, options);
        });
  };
}

}  // namespace

absl::Status UseImage(const ImageSource& source, const ImageOptions& options, core::Spec& spec) {
  spec.image_name = source.text;
  if (!source.oci()) {
    spec.root = source.BuiltInRoot();
    return absl::OkStatus();
  }
  ZYGO_ASSIGN_OR_RETURN(images::Store store, images::Store::Open(images::Store::DefaultRoot()));
  ZYGO_ASSIGN_OR_RETURN(images::RunnableImage image,
                        FindOrPullImage(store, source.reference, source.text, options.pull));
  std::string rootfs = image.rootfs;
  if (options.bytecode) rootfs = BytecodeRootOf(store, image, spec.loosening, options.verbose);
  std::string system_key;
  if (!options.system.empty()) {
    ZYGO_ASSIGN_OR_RETURN(
        SystemRoot system,
        ApplySystemPackages(store, image, rootfs, options.system,
                            NetworkedJobRunner(options.network), options.verbose));
    rootfs = system.rootfs;
    system_key = system.key;
  }
  if (!options.venv.requirements.empty()) {
    ZYGO_RETURN_IF_ERROR(
        ApplyVenv(store, image, rootfs, system_key, options.venv, options.verbose, spec));
  }
  spec.root = core::RootFs::Directory(rootfs);
  return ApplyImageConfig(image, options.caller, spec);
}

NetworkHost NetworkHostFromEnvironment() {
  NetworkHost host;
  if (const char* pasta = getenv("ZYGO_PASTA"); pasta != nullptr) host.pasta_path = pasta;
  if (const char* dns = getenv("ZYGO_DNS_UPSTREAM"); dns != nullptr) host.dns_upstream = dns;
  return host;
}

absl::StatusOr<Sandbox> PlanSandbox(const core::Spec& spec, const NetworkHost& host) {
  Sandbox sandbox;
  ZYGO_ASSIGN_OR_RETURN(sandbox.plan, core::BuildPlan(spec));
  if (spec.net != core::NetMode::kEgress && spec.net != core::NetMode::kFull) return sandbox;
  net::SandboxNetworkRequest request;
  request.mode = spec.net == core::NetMode::kEgress ? net::SandboxNetMode::kEgress
                                                    : net::SandboxNetMode::kFull;
  request.allow = spec.allow;
  if (!host.pasta_path.empty()) request.pasta_path = host.pasta_path;
  request.dns_upstream = host.dns_upstream;
  ZYGO_ASSIGN_OR_RETURN(sandbox.network, net::PlanSandboxNetwork(request));
  sandbox.network_helper = host.helper;
  if (sandbox.network_helper.empty()) {
    ZYGO_ASSIGN_OR_RETURN(
        sandbox.network_helper,
        base::FindHelperBinary("zygo-net", "net", "the network helper for --net egress/full"));
  }
  return sandbox;
}

absl::StatusOr<core::Outcome> LaunchSandbox(const Sandbox& sandbox, core::CgroupDriver* cgroups,
                                            core::LaunchOptions options) {
  std::unique_ptr<net::NetworkHelper> network;
  if (sandbox.network.has_value()) {
    options.before_release = [&](pid_t pid) -> absl::Status {
      ZYGO_ASSIGN_OR_RETURN(
          network, net::NetworkHelper::Start(sandbox.network_helper, pid, *sandbox.network));
      return absl::OkStatus();
    };
  }
  absl::StatusOr<core::Outcome> outcome = core::Launch(sandbox.plan, cgroups, options);
  if (network) network->Stop();
  return outcome;
}

}  // namespace zygo::runtime
