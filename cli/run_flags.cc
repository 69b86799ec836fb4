#include "cli/run_flags.h"

#include <getopt.h>
#include <string.h>

#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/loosening.h"
#include "core/units.h"
#include "images/package_list.h"

namespace zygo::cli {
namespace {

enum LongOnly {
  kCpus = 1000,
  kPidsLimit,
  kTimeout,
  kHostname,
  kAllowUnlimited,
  kOutcome,
  kDryRun,
  kJson,
  kVerbose,
  kTmpSize,
  kAllowHostNet,
  kExplainDenials,
  kPull,
  kTlsVerify,
  kRequirements,
  kFindLinks,
  kSystem,
  kNet,
  kAllow,
};

const struct option kOptions[] = {
    {"env", required_argument, nullptr, 'e'},
    {"workdir", required_argument, nullptr, 'w'},
    {"volume", required_argument, nullptr, 'v'},
    {"memory", required_argument, nullptr, 'm'},
    {"user", required_argument, nullptr, 'u'},
    {"cpus", required_argument, nullptr, kCpus},
    {"pids-limit", required_argument, nullptr, kPidsLimit},
    {"timeout", required_argument, nullptr, kTimeout},
    {"hostname", required_argument, nullptr, kHostname},
    {"tmp-size", required_argument, nullptr, kTmpSize},
    {"allow-unlimited", no_argument, nullptr, kAllowUnlimited},
    {"allow-host-net", no_argument, nullptr, kAllowHostNet},
    {"explain-denials", no_argument, nullptr, kExplainDenials},
    {"net", required_argument, nullptr, kNet},
    {"allow", required_argument, nullptr, kAllow},
    {"pull", required_argument, nullptr, kPull},
    {"tls-verify", optional_argument, nullptr, kTlsVerify},
    {"requirements", required_argument, nullptr, kRequirements},
    {"find-links", required_argument, nullptr, kFindLinks},
    {"system", required_argument, nullptr, kSystem},
    {"outcome", required_argument, nullptr, kOutcome},
    {"dry-run", no_argument, nullptr, kDryRun},
    {"json", no_argument, nullptr, kJson},
    {"verbose", no_argument, nullptr, kVerbose},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

absl::StatusOr<core::VolumeSpec> ParseVolume(absl::string_view text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("-v '", text, "': expected SRC:DST or SRC:DST:ro|rw"));
  }
  core::VolumeSpec volume{parts[0], parts[1], false};
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      volume.read_only = true;
    } else if (parts[2] != "rw") {
      return absl::InvalidArgumentError(
          absl::StrCat("-v '", text, "': mode must be ro or rw, not '", parts[2], "'"));
    }
  }
  return volume;
}

absl::StatusOr<uint32_t> ParseId(absl::string_view text, absl::string_view what) {
  uint32_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id == std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("-u: ", what, " '", text, "' must be a number (names are not looked up)"));
  }
  return id;
}

absl::Status ApplyOption(int option, const char* value, RunOptions* options) {
  core::Spec& spec = options->spec;
  switch (option) {
    case 'e':
      spec.env.push_back(value);
      return absl::OkStatus();
    case 'w':
      spec.workdir = value;
      options->workdir_set = true;
      return absl::OkStatus();
    case 'v': {
      ZYGO_ASSIGN_OR_RETURN(core::VolumeSpec volume, ParseVolume(value));
      spec.volumes.push_back(volume);
      return absl::OkStatus();
    }
    case 'm': {
      ZYGO_ASSIGN_OR_RETURN(spec.memory_bytes, core::ParseByteSize(value));
      return absl::OkStatus();
    }
    case 'u': {
      std::vector<std::string> ids = absl::StrSplit(value, absl::MaxSplits(':', 1));
      options->user_set = true;
      ZYGO_ASSIGN_OR_RETURN(spec.uid, ParseId(ids[0], "uid"));
      spec.gid = spec.uid;
      if (ids.size() == 2) {
        ZYGO_ASSIGN_OR_RETURN(spec.gid, ParseId(ids[1], "gid"));
      }
      return absl::OkStatus();
    }
    case kCpus: {
      ZYGO_ASSIGN_OR_RETURN(spec.cpus, core::ParsePositiveDecimal(value));
      return absl::OkStatus();
    }
    case kPidsLimit:
      if (!absl::SimpleAtoi(value, &spec.pids_limit) || spec.pids_limit < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("--pids-limit '", value, "' must be a positive whole number"));
      }
      return absl::OkStatus();
    case kTimeout: {
      ZYGO_ASSIGN_OR_RETURN(spec.timeout_ms, core::ParseDurationMs(value));
      return absl::OkStatus();
    }
    case kTmpSize: {
      ZYGO_ASSIGN_OR_RETURN(spec.tmp_size_bytes, core::ParseByteSize(value));
      return absl::OkStatus();
    }
    case kHostname:
      spec.hostname = value;
      return absl::OkStatus();
    case kAllowUnlimited:
      core::LooseningGrant::AllowUnlimited(spec.loosening);
      return absl::OkStatus();
    case kExplainDenials:
      spec.explain_denials = true;
      return absl::OkStatus();
    case kAllowHostNet:
      core::LooseningGrant::AllowHostNet(spec.loosening);
      return absl::OkStatus();
    case kNet:
      if (strcmp(value, "none") == 0) {
        spec.net = core::NetMode::kNone;
      } else if (strcmp(value, "egress") == 0) {
        spec.net = core::NetMode::kEgress;
      } else if (strcmp(value, "full") == 0) {
        spec.net = core::NetMode::kFull;
      } else if (strcmp(value, "host") == 0) {
        spec.net = core::NetMode::kHost;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--net '", value, "': use none, egress, full or host"));
      }
      return absl::OkStatus();
    case kAllow:
      spec.allow.push_back(value);
      return absl::OkStatus();
    case kPull:
      if (std::optional<PullPolicy> pull = runtime::ParsePullPolicy(value)) {
        options->pull = *pull;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--pull '", value, "' must be missing, always or never"));
      }
      return absl::OkStatus();
    case kTlsVerify:
      if (value != nullptr && strcmp(value, "false") == 0) {
        options->tls_verify = images::TlsVerify::kFalse;
      } else if (value == nullptr || strcmp(value, "true") == 0) {
        options->tls_verify = images::TlsVerify::kTrue;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--tls-verify='", value, "' must be true or false"));
      }
      return absl::OkStatus();
    case kRequirements:
      options->requirements = value;
      return absl::OkStatus();
    case kFindLinks:
      options->find_links = value;
      return absl::OkStatus();
    case kSystem:
      if (absl::Status valid = images::ValidatePackageName(value); !valid.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--system: ", valid.message()));
      }
      options->system.push_back(value);
      return absl::OkStatus();
    case kOutcome:
      options->outcome_path = value;
      return absl::OkStatus();
    case kDryRun:
      options->dry_run = true;
      return absl::OkStatus();
    case kJson:
      options->json = true;
      return absl::OkStatus();
    case kVerbose:
      options->verbose = true;
      return absl::OkStatus();
    case 'h':
      options->help = true;
      return absl::OkStatus();
  }
  return absl::InternalError("unhandled option");
}

}  // namespace

absl::StatusOr<RunOptions> ParseRunFlags(int argc, char** argv) {
  RunOptions options;
  // getopt wants argv[0] to be the program; "+" stops at the first operand (IMAGE).
  std::vector<char*> args = {const_cast<char*>("zygo run")};
  args.insert(args.end(), argv, argv + argc);
  args.push_back(nullptr);
  optind = 0;
  opterr = 0;
  int option;
  while ((option = getopt_long(static_cast<int>(args.size() - 1), args.data(), "+e:w:v:m:u:h",
                               kOptions, nullptr)) != -1) {
    if (option == '?' || option == ':') {
      std::string flag = optopt != 0 ? absl::StrCat("-", std::string(1, static_cast<char>(optopt)))
                                     : std::string(args[optind - 1]);
      return absl::InvalidArgumentError(
          option == ':' || (optopt != 0 && strchr("ewvmu", optopt) != nullptr)
              ? absl::StrCat("flag ", flag, " needs a value (see zygo run --help)")
              : absl::StrCat("unknown flag ", flag, " (see zygo run --help)"));
    }
    ZYGO_RETURN_IF_ERROR(ApplyOption(option, optarg, &options));
  }
  if (options.help) return options;
  int first = optind;
  int total = static_cast<int>(args.size() - 1);
  if (first >= total) {
    return absl::InvalidArgumentError("missing IMAGE: zygo run [flags] IMAGE CMD [ARG...]");
  }
  ZYGO_ASSIGN_OR_RETURN(options.image, runtime::ParseImageSource(args[first]));
  for (int i = first + 1; i < total; ++i) options.spec.argv.push_back(args[i]);
  // host and dir: images have no default command; an OCI image's Entrypoint/Cmd may
  // supply one, which the caller checks once the image is known.
  const bool built_in = !options.image.oci();
  if (options.spec.argv.empty() && built_in) {
    return absl::InvalidArgumentError("missing CMD: zygo run [flags] IMAGE CMD [ARG...]");
  }
  if (!options.requirements.empty() && built_in) {
    return absl::InvalidArgumentError(
        "--requirements needs an OCI image (a venv is built with its pip)");
  }
  if (!options.system.empty() && built_in) {
    return absl::InvalidArgumentError(
        "--system needs an OCI image (its packages are installed with the image's own apt)");
  }
  if (!options.find_links.empty() && options.requirements.empty()) {
    return absl::InvalidArgumentError("--find-links goes with --requirements");
  }
  return options;
}

const char* RunUsage() {
  return R"(Usage: zygo run [flags] IMAGE [CMD [ARG...]]

Runs CMD in a one-shot sandbox and exits with its exit code. Nothing is left behind.

IMAGE:
  host                  the host's /usr, /bin, /lib* and a few /etc files, read-only
  dir:PATH              a root directory (it must have /dev, /proc and /tmp)
  REF                   an OCI image (python:3.12-slim, 127.0.0.1:5000/app:v1,
                        name@sha256:...), pulled into the store on first use; its Env,
                        WorkingDir, Entrypoint/Cmd and User apply unless flags override

The sandbox: new user, pid, mount, net, ipc, uts and cgroup namespaces; a read-only
root; a tmpfs /tmp; a fresh /proc; a minimal /dev; loopback-only networking; no
capabilities; no_new_privs; a seccomp allowlist; Landlock; a cgroup with limits.

Flags:
  -e, --env KEY=VALUE   set an environment variable (the host's is never copied)
  -w, --workdir DIR     working directory inside (default /)
  -v, --volume SRC:DST[:ro|rw]
                        bind a host file or directory (default rw)
  -m, --memory SIZE     memory limit, e.g. 512m (default 256m)
      --cpus N          CPU limit in cores, e.g. 0.5 (default 1.0)
      --pids-limit N    process/thread limit (default 128)
      --timeout DUR     deadline, e.g. 30s, 1500ms, 2m (default 60s)
      --tmp-size SIZE   size of /tmp and /dev/shm (default 64m)
      --hostname NAME   hostname inside (default zygo)
  -u, --user UID[:GID]  numeric ids inside (default 0:0, mapped to your own ids)
      --allow-unlimited run without limits when no cgroup can be made
      --net MODE        none (default: loopback only); egress (only --allow'ed names,
                        through Zygo's resolver and pasta); full (public addresses only,
                        never private/LAN/metadata ranges); host (needs --allow-host-net)
      --allow HOST:PORT with --net egress: a name (or *.domain) and port the sandbox
                        may resolve and connect to; repeatable
      --allow-host-net  share the host's network (alone, it means --net host)
      --outcome FILE    write how the run ended as JSON (status, exit_code, timed_out,
                        oom_killed, peak_rss_kb, wall_ms, timings, limits, and the
                        call a process was killed for: seccomp_kill)
      --explain-denials refused syscalls still fail (EPERM), and are also counted by
                        name: printed to stderr at the end, and in --outcome
                        (seccomp_denials)
      --dry-run         print the plan and run nothing (with --json: as JSON)
      --json            JSON output for --dry-run
      --verbose         print "timing: plan X ms start Y ms run Z ms" to stderr
                        (also: zygo -v run ...)
      --pull POLICY     missing (default), always or never
      --tls-verify=false|true
                        false: pull over plain HTTP; true: HTTPS even from a
                        registry on loopback (default, as docker: plain HTTP to
                        localhost, 127.0.0.0/8 and [::1], HTTPS elsewhere)
      --requirements FILE
                        a venv of FILE's packages, read-only at /venv (VIRTUAL_ENV,
                        PATH first): built once with the image's own pip, then
                        reused for the same image and the same bytes of FILE
      --find-links DIR  pip installs from DIR's wheels only (--no-index), offline
      --system PKG      a Debian package installed with the image's own apt into a
                        root kept in the store (built once per image and package
                        list; the build reaches only the image's apt mirrors; no
                        maintainer scripts run); repeatable
  -h, --help            this text

An image whose Python stdlib has no .pyc files runs from a root with them, compiled
once on first use (ZYGO_BYTECODE=0 turns this off; a failed build is a warning).

Exit codes: the command's own; 128+N when signal N ended it; 137 when the deadline or
the OOM killer killed it; 159 (128+SIGSYS) when a call from a foreign ABI (i386's
int 0x80, x32) got it killed; 125 when zygo itself failed; 126 not executable;
127 not found.
)";
}

}  // namespace zygo::cli
