// An image's own apt sources, read from its root: where its apt-get fetches packages, and
// so the only hosts a system-package build's network may reach (images/system_layer.h).
// Both formats apt reads: one-line `deb [options] URI SUITE COMPONENT...` files
// (sources.list, sources.list.d/*.list) and deb822 paragraphs (sources.list.d/*.sources).
// Parent side.
#ifndef ZYGO_IMAGES_APT_SOURCES_H_
#define ZYGO_IMAGES_APT_SOURCES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::images {

// The files apt reads, inside the image, and the same paths apt-get is pinned to (so that
// an apt.conf of the image cannot point it at other lists than the ones parsed here).
inline constexpr char kAptSourceList[] = "/etc/apt/sources.list";
inline constexpr char kAptSourceParts[] = "/etc/apt/sources.list.d";

// One URI of an enabled `deb` or `deb-src` source.
struct AptSource {
  std::string file;  // inside the image: "/etc/apt/sources.list"
  int line = 0;      // 1-based: the source's line (one-line), its URIs field (deb822)
  std::string uri;   // as written: "http://deb.debian.org/debian"
};

// The one-line format. Everything from '#' on is a comment; `[ ... ]` options are
// skipped; a `deb`/`deb-src` line without a URI, or an unknown type, is InvalidArgument
// naming FILE:LINE.
absl::StatusOr<std::vector<AptSource>> ParseOneLineSources(absl::string_view text,
                                                           absl::string_view file);

// deb822: paragraphs separated by blank lines, '#' comment lines, folded fields
// (continuation lines start with a space or a tab), field names in any case. A paragraph
// with `Enabled: no`, or whose Types has neither deb nor deb-src, is skipped; one
// without URIs is InvalidArgument naming FILE:LINE.
absl::StatusOr<std::vector<AptSource>> ParseDeb822Sources(absl::string_view text,
                                                          absl::string_view file);

// The "HOST:PORT" names the sources' URIs need (http: 80, https: 443, or the URI's own
// port), lowercased, sorted, without duplicates: the build's egress allowlist. file:,
// copy: and cdrom: need no network. Refused, with the file, line and URI: an IP literal
// (the allowlist takes names only), a method whose hosts cannot be known from the URI
// (mirror+*, tor+*, ...), a host that is not a DNS name.
absl::StatusOr<std::vector<std::string>> SourceHosts(const std::vector<AptSource>& sources);

// The sources of the image whose root is `rootfs`: kAptSourceList, then kAptSourceParts'
// *.list and *.sources files in name order (names apt itself would read). Every path is
// resolved inside the root (openat2 RESOLVE_IN_ROOT), so an image's symlink cannot make
// zygo read a host file; missing files and directories are no sources. Errors name the
// file.
absl::StatusOr<std::vector<AptSource>> ReadAptSources(const std::string& rootfs);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_APT_SOURCES_H_
