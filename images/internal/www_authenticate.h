// Parses the WWW-Authenticate header of a 401 (RFC 7235 challenges), as registries send it:
// `Bearer realm="https://auth.example/token",service="registry",scope="repository:a:pull"`.
#ifndef ZYGO_IMAGES_INTERNAL_WWW_AUTHENTICATE_H_
#define ZYGO_IMAGES_INTERNAL_WWW_AUTHENTICATE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images::internal {

struct AuthChallenge {
  std::string scheme;                         // lowercased: "bearer", "basic"
  std::map<std::string, std::string> params;  // names lowercased, values unquoted
  std::string token68;                        // the rare `Scheme token68` form
};

// Parses one header value, which may hold several comma-separated challenges
// (`Basic realm="x", Bearer realm="y",scope="a,b"`). Quoted values may contain commas and
// backslash escapes. InvalidArgument (naming the header) when it is malformed or empty.
// Pure function; any thread.
absl::StatusOr<std::vector<AuthChallenge>> ParseWwwAuthenticate(absl::string_view header);

}  // namespace zygo::images::internal

#endif  // ZYGO_IMAGES_INTERNAL_WWW_AUTHENTICATE_H_
