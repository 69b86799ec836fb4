// Escape probe: security tests run it inside a Zygo sandbox, and outside as the positive
// control. Each subcommand attempts one escape-ish action and prints one RESULT line.
// Standalone on purpose (libc and kernel headers only, no project code), so the raw syscalls
// live here rather than in core/base/sys: the probe must not share code with what it tests.
//
// Output contract: zero or more "INFO ..." lines, then exactly one line
//   RESULT <subcommand> allowed
//   RESULT <subcommand> denied <ERRNO_NAME>
// and exit status 0. Bad usage exits 2 with usage text on stderr and no RESULT line. A probe
// killed by a signal (SIGSYS from seccomp, SIGKILL from the OOM killer) is left visible to
// the caller as that signal; probes that run the attempt in a child re-raise the child's signal.
//
// Safety: CI runs this as root on a real host if the sandbox is broken, so every attempt is
// harmless if it succeeds. Host-global files are opened O_WRONLY and nothing is written; the
// hostname is written back unchanged; reboot, kexec and module loading get arguments that a
// real kernel rejects even for root. Each probe's comment says what an unsandboxed kernel answers.

#include <stdio.h>

#include <span>
#include <string>
#include <string_view>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"
#include "security_tests/testcases/tenant_probes.h"

namespace zygo::security_tests {
namespace {

// ---------------------------------------------------------------------------------------------
// Subcommand table and entry point.

// Every table, in the order `escape_probe list` and --help show them.
std::span<const std::span<const ProbeSpec>> AllProbes() {
  static const std::span<const ProbeSpec> kTables[] = {
      FilesystemProbes(), NamespaceProbes(), KernelProbes(),  IdentityProbes(),
      ResourceProbes(),   InheritedProbes(), NetworkProbes(), TenantProbes()};
  return kTables;
}

void PrintUsage(FILE* out) {
  fprintf(out,
          "usage: escape_probe <subcommand> [args]\n"
          "       escape_probe list | --help\n"
          "Prints INFO lines, then 'RESULT <subcommand> allowed' or\n"
          "'RESULT <subcommand> denied <ERRNO>', and exits 0.\n\nsubcommands:\n");
  for (std::span<const ProbeSpec> table : AllProbes()) {
    for (const ProbeSpec& spec : table) {
      fprintf(out, "  %-18.*s %-10.*s %.*s\n", static_cast<int>(spec.name.size()), spec.name.data(),
              static_cast<int>(spec.arg_usage.size()), spec.arg_usage.data(),
              static_cast<int>(spec.description.size()), spec.description.data());
    }
  }
}

const ProbeSpec* FindProbe(std::string_view name) {
  for (std::span<const ProbeSpec> table : AllProbes()) {
    for (const ProbeSpec& spec : table) {
      if (spec.name == name) return &spec;
    }
  }
  return nullptr;
}

int BadUsageFor(const ProbeSpec& spec) {
  fprintf(stderr, "usage: escape_probe %.*s %.*s\n", static_cast<int>(spec.name.size()),
          spec.name.data(), static_cast<int>(spec.arg_usage.size()), spec.arg_usage.data());
  return 2;
}

int Main(int argc, char** argv) {
  std::string_view command = argc >= 2 ? argv[1] : "";
  if (command == "--help" || command == "-h") {
    PrintUsage(stdout);
    return 0;
  }
  if (command == "list") {
    for (std::span<const ProbeSpec> table : AllProbes()) {
      for (const ProbeSpec& spec : table) {
        printf("%.*s\n", static_cast<int>(spec.name.size()), spec.name.data());
      }
    }
    return 0;
  }
  const ProbeSpec* spec = FindProbe(command);
  if (spec == nullptr) {
    if (!command.empty()) fprintf(stderr, "escape_probe: unknown subcommand '%s'\n", argv[1]);
    PrintUsage(stderr);
    return 2;
  }
  Args args(argv + 2, argv + argc);
  if (args.size() < spec->min_args || args.size() > spec->max_args) return BadUsageFor(*spec);
  Outcome out = spec->fn(args);
  if (out.kind == Outcome::Kind::kBadUsage) return BadUsageFor(*spec);
  if (out.kind == Outcome::Kind::kAllowed) {
    printf("RESULT %s allowed\n", argv[1]);
  } else {
    printf("RESULT %s denied %s\n", argv[1], ErrnoName(out.err).c_str());
  }
  fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace zygo::security_tests

int main(int argc, char** argv) { return zygo::security_tests::Main(argc, argv); }
