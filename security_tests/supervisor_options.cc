#include "security_tests/supervisor_options.h"

#include "absl/strings/str_cat.h"
#include "testing/fake_internet.h"
#include "testing/harness.h"

namespace zygo::testing {

SupervisorProcess::Options SecurityTestSupervisor() {
  SupervisorProcess::Options options;
  options.binary = Runfile("supervisor/supervisor");
  options.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                 absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53")};
  return options;
}

}  // namespace zygo::testing
