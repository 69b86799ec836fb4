// DNS wire format (RFC 1035, EDNS0 from RFC 6891) for the egress resolver: a bounds-checked
// parser for untrusted packets and a builder for the replies the resolver sends back.
// Every function here is pure and may be called from any thread.
#ifndef ZYGO_NET_DNS_MESSAGE_H_
#define ZYGO_NET_DNS_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zygo::net {

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeCname = 5;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint16_t kDnsTypeOpt = 41;
inline constexpr uint16_t kDnsTypeAny = 255;
inline constexpr uint16_t kDnsClassIn = 1;
inline constexpr uint8_t kDnsOpcodeQuery = 0;

// The size every DNS client accepts over UDP without EDNS (RFC 1035 4.2.1).
inline constexpr size_t kDnsMaxUdpSize = 512;
// The largest reply we ever send, whatever EDNS size a client offers: the DNS flag day 2020
// recommendation, which avoids IP fragmentation.
inline constexpr size_t kDnsMaxEdnsReplySize = 1232;
// RFC 1035 2.3.4: 63 octets per label, 255 octets per name in wire form.
inline constexpr size_t kDnsMaxLabelLength = 63;
inline constexpr size_t kDnsMaxNameLength = 255;

enum class DnsRcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

// The fixed 12-byte header.
struct DnsHeader {
  uint16_t id = 0;
  bool is_response = false;  // QR
  uint8_t opcode = 0;
  bool authoritative = false;        // AA
  bool truncated = false;            // TC
  bool recursion_desired = false;    // RD
  bool recursion_available = false;  // RA
  bool checking_disabled = false;    // CD
  uint8_t rcode = 0;
  uint16_t qdcount = 0;
  uint16_t ancount = 0;
  uint16_t nscount = 0;
  uint16_t arcount = 0;
};

struct DnsQuestion {
  // Labels exactly as sent (case preserved, any bytes), so a reply can echo the question
  // byte for byte. The root name has no labels.
  std::vector<std::string> labels;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
};

// A resource record. Owner names are decompressed; `rdata` is kept raw (not decompressed),
// which is all A, AAAA and OPT need.
struct DnsRecord {
  std::vector<std::string> labels;
  uint16_t type = 0;
  uint16_t rclass = 0;
  uint32_t ttl = 0;
  std::string rdata;
};

struct DnsMessage {
  DnsHeader header;
  std::vector<DnsQuestion> questions;
  std::vector<DnsRecord> answers;
  std::vector<DnsRecord> authorities;
  std::vector<DnsRecord> additionals;
};

// A query as the resolver needs it: exactly one question, plus the client's EDNS offer.
struct DnsQuery {
  DnsHeader header;
  DnsQuestion question;
  bool has_edns = false;
  uint16_t edns_udp_size = 0;  // only meaningful with has_edns

  // The largest reply this client accepts: 512 without EDNS, else its offer clamped to
  // [512, kDnsMaxEdnsReplySize].
  size_t MaxReplySize() const;
};

// An address answer for the reply: type A (rdata 4 bytes) or AAAA (16 bytes).
struct DnsAnswer {
  uint16_t type = 0;
  uint32_t ttl = 0;
  std::string rdata;
};

// Parses the fixed header; nullopt when the packet is shorter than 12 bytes.
std::optional<DnsHeader> ParseDnsHeader(absl::Span<const uint8_t> packet);

// Parses a whole message. Every read is bounds-checked; names may use compression, but
// each pointer must point before the start of the name segment it is found in (so chains
// strictly go backwards and end), and names are limited to 63-octet labels and 255 octets.
// Trailing bytes after the last record are an error. InvalidArgument says what was wrong.
absl::StatusOr<DnsMessage> ParseDnsMessage(absl::Span<const uint8_t> packet);

// Parses a query from a client: a parsable message with QR clear, exactly one question,
// no answer or authority records, and at most one OPT record (which must be at the root).
absl::StatusOr<DnsQuery> ParseDnsQuery(absl::Span<const uint8_t> packet);

// Lowercases ASCII and joins the labels with '.', without a trailing dot; the root name
// is "". InvalidArgument unless every label is letters, digits, '-' or '_' (so a label
// cannot smuggle a '.' and no two names normalize alike).
absl::StatusOr<std::string> NormalizeDnsName(const std::vector<std::string>& labels);

// How many of `answers`, in order, fit into a reply to `query` within query.MaxReplySize().
size_t DnsAnswersThatFit(const DnsQuery& query, absl::Span<const DnsAnswer> answers);

// A reply to `query`: same ID, opcode, RD and CD, QR and RA set, the question echoed as
// sent, `rcode`, one answer record per element of `answers` owned by the question name
// (compressed to a pointer at it), and an OPT record when the query had one. Answers that
// do not fit within query.MaxReplySize() are left out; TC is never set.
std::vector<uint8_t> BuildDnsReply(const DnsQuery& query, DnsRcode rcode,
                                   absl::Span<const DnsAnswer> answers);

// A reply without a question, for queries too broken to echo (FORMERR) or with an opcode
// we do not serve (NOTIMP): same ID, opcode and RD; QR and RA set.
std::vector<uint8_t> BuildDnsHeaderOnlyReply(const DnsHeader& query_header, DnsRcode rcode);

// A standard recursive query for `name` ("a.example.com", no escapes) with RD set, for
// tests and health checks. InvalidArgument for an empty label or one over 63 octets, or a
// name over 255 octets.
absl::StatusOr<std::vector<uint8_t>> BuildDnsQuery(uint16_t id, absl::string_view name,
                                                   uint16_t qtype);

}  // namespace zygo::net

#endif  // ZYGO_NET_DNS_MESSAGE_H_
