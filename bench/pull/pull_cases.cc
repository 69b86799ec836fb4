#include "bench/pull/pull_cases.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/plan.h"
#include "core/spec.h"

namespace zygo::bench {
namespace {

constexpr char kPeerLayoutTag[] = "/layout:bench";

TimedStep ZygoStep(const std::string& name, std::vector<std::string> argv,
                   const std::vector<std::string>& caller_env, bool bytecode_off) {
  Command command{std::move(argv), ZygoEnvironment(caller_env, bytecode_off), false, ""};
  std::string shown = absl::StrCat(bytecode_off ? "ZYGO_BYTECODE=0 " : "env -u ZYGO_BYTECODE ",
                                   CommandLine(command));
  return {name, std::move(command), std::move(shown)};
}

TimedStep PlainStep(const std::string& name, std::vector<std::string> argv) {
  Command command{std::move(argv), {}, true, ""};
  std::string shown = CommandLine(command);
  return {name, std::move(command), std::move(shown)};
}

std::vector<std::string> ZygoPull(const PullCommandsInput& in, const std::string& store) {
  return {in.zygo, "--root", store, "pull", "--tls-verify=false", in.reference};
}

}  // namespace

std::vector<std::string> ZygoEnvironment(const std::vector<std::string>& caller_env,
                                         bool bytecode_off) {
  std::vector<std::string> env;
  for (const std::string& entry : caller_env) {
    if (absl::StartsWith(entry, "ZYGO_HOME=") || absl::StartsWith(entry, "ZYGO_BYTECODE=")) {
      continue;
    }
    env.push_back(entry);
  }
  if (bytecode_off) env.push_back("ZYGO_BYTECODE=0");
  return env;
}

std::string PeerRootfs(const std::string& peer_dir) { return peer_dir + "/bundle/rootfs"; }

std::vector<std::pair<std::string, std::vector<TimedStep>>> PullSteps(const PullCommandsInput& in,
                                                                      bool with_default_cold) {
  std::vector<std::pair<std::string, std::vector<TimedStep>>> variants;
  variants.push_back({kVariantZygoCold,
                      {ZygoStep("zygo pull", ZygoPull(in, in.cold_store), in.caller_env, true)}});
  if (with_default_cold) {
    variants.push_back(
        {absl::StrCat(kVariantZygoCold, " default"),
         {ZygoStep("zygo pull", ZygoPull(in, in.cold_store), in.caller_env, false)}});
  }
  variants.push_back({kVariantZygoWarm,
                      {ZygoStep("zygo pull", ZygoPull(in, in.warm_store), in.caller_env, true)}});
  const std::string layout = in.peer_dir + kPeerLayoutTag;
  variants.push_back({kVariantPullPeer,
                      {PlainStep("skopeo copy", {in.skopeo, "copy", "--src-tls-verify=false",
                                                 "docker://" + in.reference, "oci:" + layout}),
                       PlainStep("umoci unpack", {in.umoci, "unpack", "--rootless", "--image",
                                                  layout, in.peer_dir + "/bundle"})}});
  return variants;
}

std::vector<std::pair<std::string, std::vector<TimedStep>>> OneShotSteps(
    const OneShotCommandsInput& in) {
  std::vector<std::string> zygo_argv = {in.zygo, "--root", in.store, "run", in.image};
  zygo_argv.insert(zygo_argv.end(), in.argv.begin(), in.argv.end());

  core::Spec spec;  // for zygo's defaults: hostname, and the environment it builds
  spec.image_env = in.image_env;
  const std::string workdir = in.working_dir.empty() ? spec.workdir : in.working_dir;
  std::vector<std::string> bwrap = {
      in.bwrap,        "--unshare-all", "--unshare-user", "--die-with-parent",
      "--new-session", "--ro-bind",     in.rootfs,        "/"};
  bwrap.insert(bwrap.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--hostname",
                             spec.hostname, "--chdir", workdir, "--clearenv"});
  for (const std::string& entry : core::BuildEnvironment(spec)) {
    size_t eq = entry.find('=');
    bwrap.insert(bwrap.end(), {"--setenv", entry.substr(0, eq), entry.substr(eq + 1)});
  }
  bwrap.insert(bwrap.end(), in.argv.begin(), in.argv.end());

  return {{kVariantZygoNoBytecode, {ZygoStep("zygo run", zygo_argv, in.caller_env, true)}},
          {kVariantZygoDefault, {ZygoStep("zygo run", zygo_argv, in.caller_env, false)}},
          {kVariantRunPeer, {PlainStep("bwrap", std::move(bwrap))}}};
}

}  // namespace zygo::bench
