// IPv4/IPv6 addresses and prefixes as plain values, for the address policy and the
// firewall. Pure logic: no sockets, no privileges.
#ifndef ZYGO_NET_IP_ADDRESS_H_
#define ZYGO_NET_IP_ADDRESS_H_

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zygo::net {

// One IPv4 or IPv6 address, in network byte order.
class IpAddress {
 public:
  static IpAddress V4(const in_addr& addr);
  static IpAddress V6(const in6_addr& addr);
  // `bytes` must hold 4 bytes for AF_INET or 16 for AF_INET6; InvalidArgument otherwise.
  static absl::StatusOr<IpAddress> FromBytes(int family, absl::Span<const uint8_t> bytes);
  // Parses numeric text only: dotted quad ("192.0.2.1", no octal, no "127.1") or RFC 4291
  // text ("2001:db8::1", "::ffff:192.0.2.1"). Brackets and zone ids ("%eth0") are refused.
  static absl::StatusOr<IpAddress> Parse(absl::string_view text);

  int family() const { return family_; }  // AF_INET or AF_INET6
  bool is_v4() const { return family_ == AF_INET; }
  bool is_v6() const { return family_ == AF_INET6; }
  // 4 or 16 bytes.
  absl::Span<const uint8_t> bytes() const {
    return absl::MakeConstSpan(bytes_.data(), is_v4() ? 4 : 16);
  }
  in_addr v4() const;   // only when is_v4()
  in6_addr v6() const;  // only when is_v6()

  // For an IPv4-mapped IPv6 address (::ffff:a.b.c.d), the IPv4 address a.b.c.d: an AF_INET6
  // socket connecting to it sends IPv4 packets. Otherwise nullopt.
  std::optional<IpAddress> MappedV4() const;

  // Canonical text: dotted quad or RFC 5952 (what inet_ntop gives).
  std::string ToString() const;

  bool operator==(const IpAddress& other) const {
    return family_ == other.family_ && bytes_ == other.bytes_;
  }
  bool operator!=(const IpAddress& other) const { return !(*this == other); }

 private:
  IpAddress(int family, const std::array<uint8_t, 16>& bytes) : family_(family), bytes_(bytes) {}

  int family_;
  std::array<uint8_t, 16> bytes_;  // the first 4 for AF_INET; the rest zero
};

// An address and a prefix length, e.g. 10.0.0.0/8. Bits past the length are zero.
class IpPrefix {
 public:
  // InvalidArgument when `length` exceeds the family's width or host bits are set.
  static absl::StatusOr<IpPrefix> Create(const IpAddress& network, int length);
  // "10.0.0.0/8", "fc00::/7"; a bare address is a /32 or /128.
  static absl::StatusOr<IpPrefix> Parse(absl::string_view text);

  const IpAddress& network() const { return network_; }
  int length() const { return length_; }
  int family() const { return network_.family(); }

  // True when `address` is of the same family and its first length() bits match.
  bool Contains(const IpAddress& address) const;
  // The netmask as bytes of the family's width (ff000000 for /8).
  std::array<uint8_t, 16> Mask() const;
  std::string ToString() const;

  bool operator==(const IpPrefix& other) const {
    return network_ == other.network_ && length_ == other.length_;
  }

 private:
  IpPrefix(const IpAddress& network, int length) : network_(network), length_(length) {}

  IpAddress network_;
  int length_;
};

}  // namespace zygo::net

#endif  // ZYGO_NET_IP_ADDRESS_H_
