// apt's two source formats, parsed for their URIs only, and the files read from an
// image's root without ever leaving it.
#include "images/apt_sources.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/openat2.h"
#include "core/base/unique_fd.h"

namespace zygo::images {
namespace {

using base::UniqueFd;

// Symlinks are followed, as apt inside the sandbox follows them, but never out of the
// image's root.
constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
constexpr int64_t kMaxSourceFileBytes = 1 << 20;

absl::Status Malformed(absl::string_view file, int line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", line, ": ", why));
}

bool IsSourceType(absl::string_view type) { return type == "deb" || type == "deb-src"; }

std::vector<absl::string_view> Words(absl::string_view text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

// One deb822 paragraph: lowercased field name -> value (folded lines joined by a space)
// and the line the field started on.
using Paragraph = std::map<std::string, std::pair<std::string, int>>;

absl::Status AddParagraph(const Paragraph& paragraph, absl::string_view file, int first_line,
                          std::vector<AptSource>& out) {
  if (paragraph.empty()) return absl::OkStatus();
  auto value = [&](const char* field) -> std::string {
    auto it = paragraph.find(field);
    return it == paragraph.end() ? "" : it->second.first;
  };
  if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(value("enabled"))) == "no") {
    return absl::OkStatus();
  }
  std::vector<absl::string_view> types = Words(value("types"));
  if (std::none_of(types.begin(), types.end(), IsSourceType)) return absl::OkStatus();
  auto uris = paragraph.find("uris");
  if (uris == paragraph.end() || Words(uris->second.first).empty()) {
    return Malformed(file, first_line, "a deb822 source without URIs");
  }
  for (absl::string_view uri : Words(uris->second.first)) {
    out.push_back({std::string(file), uris->second.second, std::string(uri)});
  }
  return absl::OkStatus();
}

// The authority's host and port of an http(s) URI, or why there is none zygo can allow.
absl::StatusOr<std::string> HostEntry(absl::string_view scheme, absl::string_view rest) {
  if (!absl::ConsumePrefix(&rest, "//")) return absl::InvalidArgumentError("no host");
  absl::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  if (absl::StartsWith(authority, "[")) {
    return absl::InvalidArgumentError("an IP address (the build's network allows names only)");
  }
  std::string port = scheme == "https" ? "443" : "80";
  absl::string_view host = authority;
  if (size_t colon = authority.rfind(':'); colon != absl::string_view::npos) {
    host = authority.substr(0, colon);
    int number = 0;
    if (!absl::SimpleAtoi(authority.substr(colon + 1), &number) || number < 1 || number > 65535) {
      return absl::InvalidArgumentError("a bad port");
    }
    port = absl::StrCat(number);
  }
  std::string name = absl::AsciiStrToLower(host);
  if (name.empty()) return absl::InvalidArgumentError("no host");
  if (std::all_of(name.begin(), name.end(),
                  [](char c) { return absl::ascii_isdigit(c) || c == '.'; })) {
    return absl::InvalidArgumentError("an IP address (the build's network allows names only)");
  }
  if (!std::all_of(name.begin(), name.end(),
                   [](char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.'; })) {
    return absl::InvalidArgumentError("a host that is not a DNS name");
  }
  return absl::StrCat(name, ":", port);
}

// The whole of a regular file at `path` below `root`, or nullopt when there is none.
absl::StatusOr<std::optional<std::string>> ReadInRoot(int root, const std::string& path) {
  int fd = base::sys::RawOpenat2(root, path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0, kInRoot);
  if (fd == -ENOENT || fd == -ENOTDIR) return std::optional<std::string>();
  if (fd < 0) return base::ErrnoStatus(-fd, absl::StrCat("openat2(/", path, ", RESOLVE_IN_ROOT)"));
  UniqueFd file(fd);
  struct stat st;
  if (::fstat(file.get(), &st) != 0)
    return base::ErrnoStatus(errno, absl::StrCat("fstat(/", path, ")"));
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxSourceFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("/", path, ": not a regular file of at most 1 MiB"));
  }
  ZYGO_ASSIGN_OR_RETURN(std::string text, base::sys::ReadToEnd(file, "/" + path));
  return std::optional<std::string>(std::move(text));
}

// The names in sources.list.d that apt reads: [A-Za-z0-9_.-]+ ending .list or .sources.
absl::StatusOr<std::vector<std::string>> SourcePartNames(int root) {
  std::string parts(absl::StripPrefix(kAptSourceParts, "/"));
  int fd =
      base::sys::RawOpenat2(root, parts.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, kInRoot);
  if (fd == -ENOENT || fd == -ENOTDIR) return std::vector<std::string>();
  if (fd < 0) return base::ErrnoStatus(-fd, absl::StrCat("openat2(", kAptSourceParts, ")"));
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    ::close(fd);
    return base::ErrnoStatus(err, absl::StrCat("fdopendir(", kAptSourceParts, ")"));
  }
  std::vector<std::string> names;
  while (struct dirent* entry = ::readdir(dir)) {
    absl::string_view name = entry->d_name;
    bool apt_reads = std::all_of(name.begin(), name.end(), [](char c) {
      return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
    });
    if (apt_reads && (absl::EndsWith(name, ".list") || absl::EndsWith(name, ".sources"))) {
      names.emplace_back(name);
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<std::vector<AptSource>> ParseOneLineSources(absl::string_view text,
                                                           absl::string_view file) {
  std::vector<AptSource> sources;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> words = Words(line);
    if (words.empty()) continue;
    if (!IsSourceType(words[0])) {
      return Malformed(file, number,
                       absl::StrCat("unknown source type \"", words[0], "\" (deb or deb-src)"));
    }
    size_t next = 1;
    if (next < words.size() && absl::StartsWith(words[next], "[")) {
      while (next < words.size() && !absl::StrContains(words[next], ']')) ++next;
      ++next;  // past the word that closes the options
    }
    if (next >= words.size()) return Malformed(file, number, "a source without a URI");
    sources.push_back({std::string(file), number, std::string(words[next])});
  }
  return sources;
}

absl::StatusOr<std::vector<AptSource>> ParseDeb822Sources(absl::string_view text,
                                                          absl::string_view file) {
  std::vector<AptSource> sources;
  Paragraph paragraph;
  std::string last;  // the field a continuation line continues
  int number = 0, first = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) {
      ZYGO_RETURN_IF_ERROR(AddParagraph(paragraph, file, first, sources));
      paragraph.clear();
      last.clear();
      continue;
    }
    if (absl::StartsWith(line, "#")) continue;
    if (line[0] == ' ' || line[0] == '\t') {
      if (last.empty()) return Malformed(file, number, "a continuation line without a field");
      absl::StrAppend(&paragraph[last].first, " ", absl::StripAsciiWhitespace(line));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos)
      return Malformed(file, number, "not a \"Field: value\" line");
    if (paragraph.empty()) first = number;
    last = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon)));
    paragraph[last] = {std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))), number};
  }
  ZYGO_RETURN_IF_ERROR(AddParagraph(paragraph, file, first, sources));
  return sources;
}

absl::StatusOr<std::vector<std::string>> SourceHosts(const std::vector<AptSource>& sources) {
  std::set<std::string> hosts;
  for (const AptSource& source : sources) {
    size_t colon = source.uri.find(':');
    std::string scheme =
        colon == std::string::npos ? "" : absl::AsciiStrToLower(source.uri.substr(0, colon));
    if (scheme == "file" || scheme == "copy" || scheme == "cdrom") continue;
    absl::StatusOr<std::string> host = absl::InvalidArgumentError(
        "a method whose hosts zygo cannot tell from the URI (use http or https)");
    if (scheme == "http" || scheme == "https") {
      host = HostEntry(scheme, absl::string_view(source.uri).substr(colon + 1));
    }
    if (!host.ok()) {
      return Malformed(source.file, source.line,
                       absl::StrCat(source.uri, ": ", host.status().message()));
    }
    hosts.insert(*std::move(host));
  }
  return std::vector<std::string>(hosts.begin(), hosts.end());
}

absl::StatusOr<std::vector<AptSource>> ReadAptSources(const std::string& rootfs) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd root, base::sys::OpenDirectory(rootfs));
  std::vector<AptSource> sources;
  auto add = [&](const std::string& path, bool deb822) -> absl::Status {
    ZYGO_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadInRoot(root.get(), path));
    if (!text.has_value()) return absl::OkStatus();
    std::string file = "/" + path;
    ZYGO_ASSIGN_OR_RETURN(std::vector<AptSource> parsed, deb822 ? ParseDeb822Sources(*text, file)
                                                                : ParseOneLineSources(*text, file));
    sources.insert(sources.end(), parsed.begin(), parsed.end());
    return absl::OkStatus();
  };
  ZYGO_RETURN_IF_ERROR(add(std::string(absl::StripPrefix(kAptSourceList, "/")), false));
  ZYGO_ASSIGN_OR_RETURN(std::vector<std::string> parts, SourcePartNames(root.get()));
  for (const std::string& name : parts) {
    std::string path = absl::StrCat(absl::StripPrefix(kAptSourceParts, "/"), "/", name);
    ZYGO_RETURN_IF_ERROR(add(path, absl::EndsWith(name, ".sources")));
  }
  return sources;
}

}  // namespace zygo::images
