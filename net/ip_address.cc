// IPv4/IPv6 address and prefix values.
#include "net/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zygo::net {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int FamilyBits(int family) { return family == AF_INET ? 32 : 128; }

}  // namespace

IpAddress IpAddress::V4(const in_addr& addr) {
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &addr, 4);
  return IpAddress(AF_INET, bytes);
}

IpAddress IpAddress::V6(const in6_addr& addr) {
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &addr, 16);
  return IpAddress(AF_INET6, bytes);
}

absl::StatusOr<IpAddress> IpAddress::FromBytes(int family, absl::Span<const uint8_t> bytes) {
  if (!((family == AF_INET && bytes.size() == 4) || (family == AF_INET6 && bytes.size() == 16))) {
    return absl::InvalidArgumentError(
        absl::StrCat("an address of family ", family, " cannot have ", bytes.size(), " bytes"));
  }
  std::array<uint8_t, 16> array{};
  std::memcpy(array.data(), bytes.data(), bytes.size());
  return IpAddress(family, array);
}

absl::StatusOr<IpAddress> IpAddress::Parse(absl::string_view text) {
  // inet_pton wants a NUL-terminated string; an embedded NUL would truncate it silently.
  if (text.find('\0') == absl::string_view::npos && text.size() < INET6_ADDRSTRLEN) {
    std::string copy(text);
    std::array<uint8_t, 16> bytes{};
    if (inet_pton(AF_INET, copy.c_str(), bytes.data()) == 1) return IpAddress(AF_INET, bytes);
    if (inet_pton(AF_INET6, copy.c_str(), bytes.data()) == 1) return IpAddress(AF_INET6, bytes);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", text, "\" is not a numeric IPv4 or IPv6 address"));
}

in_addr IpAddress::v4() const {
  in_addr addr;
  std::memcpy(&addr, bytes_.data(), 4);
  return addr;
}

in6_addr IpAddress::v6() const {
  in6_addr addr;
  std::memcpy(&addr, bytes_.data(), 16);
  return addr;
}

std::optional<IpAddress> IpAddress::MappedV4() const {
  if (!is_v6() || std::memcmp(bytes_.data(), kMappedPrefix, sizeof(kMappedPrefix)) != 0) {
    return std::nullopt;
  }
  std::array<uint8_t, 16> v4{};
  std::memcpy(v4.data(), bytes_.data() + 12, 4);
  return IpAddress(AF_INET, v4);
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family_, bytes_.data(), text, sizeof(text));
  return text;
}

absl::StatusOr<IpPrefix> IpPrefix::Create(const IpAddress& network, int length) {
  const int bits = FamilyBits(network.family());
  if (length < 0 || length > bits) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefix length ", length, " is out of range for ", network.ToString()));
  }
  IpPrefix prefix(network, length);
  const std::array<uint8_t, 16> mask = prefix.Mask();
  absl::Span<const uint8_t> bytes = network.bytes();
  for (size_t i = 0; i < bytes.size(); ++i) {
    if ((bytes[i] & ~mask[i]) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(network.ToString(), "/", length,
                                                     " has host bits set past the prefix length"));
    }
  }
  return prefix;
}

absl::StatusOr<IpPrefix> IpPrefix::Parse(absl::string_view text) {
  const size_t slash = text.find('/');
  absl::StatusOr<IpAddress> address = IpAddress::Parse(text.substr(0, slash));
  if (!address.ok()) return address.status();
  int length = FamilyBits(address->family());
  if (slash != absl::string_view::npos) {
    absl::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != absl::string_view::npos ||
        !absl::SimpleAtoi(digits, &length)) {
      return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" has a bad prefix length"));
    }
  }
  return Create(*address, length);
}

bool IpPrefix::Contains(const IpAddress& address) const {
  if (address.family() != family()) return false;
  const std::array<uint8_t, 16> mask = Mask();
  absl::Span<const uint8_t> want = network_.bytes();
  absl::Span<const uint8_t> have = address.bytes();
  for (size_t i = 0; i < want.size(); ++i) {
    if ((have[i] & mask[i]) != want[i]) return false;
  }
  return true;
}

std::array<uint8_t, 16> IpPrefix::Mask() const {
  std::array<uint8_t, 16> mask{};
  int remaining = length_;
  for (size_t i = 0; i < mask.size() && remaining > 0; ++i) {
    const int take = remaining >= 8 ? 8 : remaining;
    mask[i] = static_cast<uint8_t>(0xff00 >> take);
    remaining -= take;
  }
  return mask;
}

std::string IpPrefix::ToString() const { return absl::StrCat(network_.ToString(), "/", length_); }

}  // namespace zygo::net
