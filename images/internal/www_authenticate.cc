// A small cursor-based parser for RFC 7235 challenge lists. The one subtle part is the
// comma: it separates both auth-params and challenges, so after a comma a `name=` means
// another param of the same challenge and anything else starts a new challenge.
#include "images/internal/www_authenticate.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zygo::images::internal {
namespace {

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsToken68Char(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("-._~+/").find(c) != absl::string_view::npos;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<AuthChallenge>> Parse() {
    std::vector<AuthChallenge> challenges;
    SkipSeparators();
    while (!AtEnd()) {
      AuthChallenge challenge;
      challenge.scheme = absl::AsciiStrToLower(Token());
      if (challenge.scheme.empty()) return Error("expected an auth scheme");
      if (!AtEnd() && !IsSpace(Peek()) && Peek() != ',') return Error("expected a space");
      SkipSpaces();
      if (!AtEnd() && Peek() != ',') {
        if (LooksLikeToken68()) {
          challenge.token68 = Token68();
        } else if (absl::Status status = Params(challenge); !status.ok()) {
          return status;
        }
      }
      SkipSeparators();
      challenges.push_back(std::move(challenge));
    }
    if (challenges.empty()) return Error("no challenge");
    return challenges;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  static bool IsSpace(char c) { return c == ' ' || c == '\t'; }

  void SkipSpaces() {
    while (!AtEnd() && IsSpace(Peek())) ++pos_;
  }
  // Empty list elements are allowed (RFC 7230 section 7): "a, , b".
  void SkipSeparators() {
    while (!AtEnd() && (IsSpace(Peek()) || Peek() == ',')) ++pos_;
  }

  std::string Token() {
    size_t start = pos_;
    while (!AtEnd() && IsTokenChar(Peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=", ending the
  // challenge. `name=value` is not one: after the '='s comes more text.
  bool LooksLikeToken68() const {
    size_t p = pos_;
    while (p < text_.size() && IsToken68Char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && text_[p] == '=') ++p;
    while (p < text_.size() && IsSpace(text_[p])) ++p;
    return p == text_.size() || text_[p] == ',';
  }

  std::string Token68() {
    size_t start = pos_;
    while (!AtEnd() && (IsToken68Char(Peek()) || Peek() == '=')) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // After a separator: does `name =` follow (another param) or a new challenge?
  bool NextIsParam() const {
    size_t p = pos_;
    while (p < text_.size() && IsTokenChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && IsSpace(text_[p])) ++p;
    return p < text_.size() && text_[p] == '=';
  }

  absl::StatusOr<std::string> QuotedString() {
    std::string value;
    ++pos_;  // the opening quote
    while (!AtEnd()) {
      char c = text_[pos_++];
      if (c == '"') return value;
      if (c == '\\') {
        if (AtEnd()) break;
        c = text_[pos_++];
      }
      value.push_back(c);
    }
    return Error("unterminated quoted string");
  }

  absl::Status Params(AuthChallenge& challenge) {
    for (;;) {
      std::string name = absl::AsciiStrToLower(Token());
      if (name.empty()) return Error("expected a parameter name");
      SkipSpaces();
      if (AtEnd() || Peek() != '=') return Error(absl::StrCat("expected '=' after ", name));
      ++pos_;
      SkipSpaces();
      std::string value;
      if (!AtEnd() && Peek() == '"') {
        absl::StatusOr<std::string> quoted = QuotedString();
        if (!quoted.ok()) return quoted.status();
        value = *std::move(quoted);
      } else {
        value = Token();
      }
      // RFC 7235: each parameter name MUST only occur once; keep the first.
      challenge.params.emplace(std::move(name), std::move(value));
      SkipSpaces();
      if (AtEnd()) return absl::OkStatus();
      if (Peek() != ',') return Error("expected ','");
      SkipSeparators();
      if (AtEnd() || !NextIsParam()) return absl::OkStatus();
    }
  }

  absl::Status Error(absl::string_view what) const {
    constexpr size_t kMaxShown = 200;  // the header comes from the network
    absl::string_view shown = text_.substr(0, kMaxShown);
    return absl::InvalidArgumentError(absl::StrCat("invalid WWW-Authenticate header \"", shown,
                                                   shown.size() < text_.size() ? "..." : "",
                                                   "\": ", what, " at offset ", pos_));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<AuthChallenge>> ParseWwwAuthenticate(absl::string_view header) {
  return Parser(header).Parse();
}

}  // namespace zygo::images::internal
