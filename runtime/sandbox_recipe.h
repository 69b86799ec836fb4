// The one recipe both `zygo run` and the supervisor's functions follow to turn what a
// user asked for into a sandbox that can be launched:
//
//   UseImage      the image source into the spec: its root, and for an OCI image (pulled
//                 as the policy says) its config, bytecode root, system packages and venv
//   PlanSandbox   the checked plan, and the network plan for egress/full (refused here,
//                 before any clone)
//   LaunchSandbox the launch, with the network hooked up before the command runs and
//                 taken down after the sandbox ends
//
// What differs between the two callers is only what they pass in: the CLI's flags, or a
// function's spec with its agent as the command.
#ifndef ZYGO_RUNTIME_SANDBOX_RECIPE_H_
#define ZYGO_RUNTIME_SANDBOX_RECIPE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "core/spec.h"
#include "images/run_image.h"
#include "net/sandbox_network_plan.h"
#include "runtime/image_config.h"
#include "runtime/image_pull.h"
#include "runtime/image_source.h"
#include "runtime/python_image.h"

namespace zygo::runtime {

// Where the network's parts are on this host. Empty fields take the defaults: zygo-net
// found beside this binary, /usr/bin/pasta, the host's resolv.conf.
struct NetworkHost {
  std::string helper;
  std::string pasta_path;
  std::string dns_upstream;
};

struct ImageOptions {
  PullOptions pull;
  CallerSettings caller;
  bool bytecode = false;  // run a Python image from its bytecode root
  // Debian packages (canonical, images/package_list.h) in a system layer over that
  // root; empty: none. Its build reaches the image's apt mirrors through `network`.
  std::vector<std::string> system;
  NetworkHost network;
  VenvFiles venv;        // requirements empty: no venv
  bool verbose = false;  // say what was built
};

// Sets spec.root and spec.image_name; for an OCI image also its Env, WorkingDir, User,
// command, system packages and /venv as `options` say (the venv is built against the
// root with the packages). An OCI image's root is in the store, ours to prepare (a
// function's mountpoints); a dir: root is the user's and never written.
absl::Status UseImage(const ImageSource& source, const ImageOptions& options, core::Spec& spec);

// ZYGO_PASTA and ZYGO_DNS_UPSTREAM, which point a test at its own pasta and DNS server.
NetworkHost NetworkHostFromEnvironment();

struct Sandbox {
  core::Plan plan;
  // egress/full: held by zygo-net for the sandbox's whole life.
  std::optional<net::SandboxNetworkPlan> network;
  std::string network_helper;  // path of zygo-net, with `network`
};

absl::StatusOr<Sandbox> PlanSandbox(const core::Spec& spec, const NetworkHost& host);

// core::Launch with the sandbox's network: `options.before_release` is taken by the
// network hookup when there is one.
absl::StatusOr<core::Outcome> LaunchSandbox(const Sandbox& sandbox, core::CgroupDriver* cgroups,
                                            core::LaunchOptions options = {});

}  // namespace zygo::runtime

#endif  // ZYGO_RUNTIME_SANDBOX_RECIPE_H_
