// DNS wire format parsing and building; every read of a packet goes through Reader, which
// checks bounds before touching a byte.
#include "net/dns_message.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"

namespace zygo::net {
namespace {

constexpr size_t kHeaderSize = 12;
// Size of type, class, TTL and RDLENGTH after a record's owner name.
constexpr size_t kRecordFixedSize = 10;
// A compressed owner name: one two-byte pointer.
constexpr size_t kPointerSize = 2;
constexpr size_t kOptRecordSize = 1 + kRecordFixedSize;
// Backstop to the "pointers go strictly backwards" rule; a real name never needs more
// than a handful of jumps.
constexpr int kMaxCompressionJumps = 32;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed DNS message: ", what));
}

class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> data) : data_(data) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }

  absl::Status U8(uint8_t* out) {
    if (remaining() < 1) return Malformed("truncated");
    *out = data_[offset_++];
    return absl::OkStatus();
  }
  absl::Status U16(uint16_t* out) {
    if (remaining() < 2) return Malformed("truncated");
    *out = static_cast<uint16_t>(data_[offset_] << 8 | data_[offset_ + 1]);
    offset_ += 2;
    return absl::OkStatus();
  }
  absl::Status U32(uint32_t* out) {
    uint16_t hi = 0;
    uint16_t lo = 0;
    ZYGO_RETURN_IF_ERROR(U16(&hi));
    ZYGO_RETURN_IF_ERROR(U16(&lo));
    *out = static_cast<uint32_t>(hi) << 16 | lo;
    return absl::OkStatus();
  }
  absl::Status Bytes(size_t n, std::string* out) {
    if (remaining() < n) return Malformed("truncated");
    out->assign(reinterpret_cast<const char*>(data_.data() + offset_), n);
    offset_ += n;
    return absl::OkStatus();
  }

  // Reads a possibly compressed name (RFC 1035 4.1.4) and leaves the offset after it.
  absl::Status Name(std::vector<std::string>* labels) {
    labels->clear();
    size_t pos = offset_;
    size_t segment_start = pos;
    size_t wire_length = 1;  // the terminating root label
    bool jumped = false;
    int jumps = 0;
    while (true) {
      if (pos >= data_.size()) return Malformed("name runs past the end");
      const uint8_t len = data_[pos];
      if ((len & 0xC0) == 0xC0) {
        if (pos + 1 >= data_.size()) return Malformed("truncated compression pointer");
        const size_t target = static_cast<size_t>(len & 0x3F) << 8 | data_[pos + 1];
        // Only backwards, and before the segment being read: the chain of segment starts
        // then strictly decreases, so no packet can make this loop forever.
        if (target >= segment_start) return Malformed("compression pointer does not go back");
        if (++jumps > kMaxCompressionJumps) return Malformed("too many compression pointers");
        if (!jumped) offset_ = pos + 2;
        jumped = true;
        pos = segment_start = target;
        continue;
      }
      // 0x40 and 0x80 are the obsolete extended label types (RFC 6891 5): a label longer
      // than 63 octets cannot be encoded, so these are errors.
      if ((len & 0xC0) != 0) return Malformed("label longer than 63 octets");
      if (len == 0) {
        if (!jumped) offset_ = pos + 1;
        return absl::OkStatus();
      }
      wire_length += 1 + len;
      if (wire_length > kDnsMaxNameLength) return Malformed("name longer than 255 octets");
      if (data_.size() - pos - 1 < len) return Malformed("label runs past the end");
      labels->emplace_back(reinterpret_cast<const char*>(data_.data() + pos + 1), len);
      pos += 1 + len;
    }
  }

 private:
  absl::Span<const uint8_t> data_;
  size_t offset_ = 0;
};

DnsHeader HeaderFromBytes(absl::Span<const uint8_t> p) {
  auto u16 = [&](size_t i) { return static_cast<uint16_t>(p[i] << 8 | p[i + 1]); };
  DnsHeader h;
  h.id = u16(0);
  const uint8_t f1 = p[2];
  const uint8_t f2 = p[3];
  h.is_response = f1 & 0x80;
  h.opcode = (f1 >> 3) & 0x0F;
  h.authoritative = f1 & 0x04;
  h.truncated = f1 & 0x02;
  h.recursion_desired = f1 & 0x01;
  h.recursion_available = f2 & 0x80;
  h.checking_disabled = f2 & 0x10;
  h.rcode = f2 & 0x0F;
  h.qdcount = u16(4);
  h.ancount = u16(6);
  h.nscount = u16(8);
  h.arcount = u16(10);
  return h;
}

absl::Status ReadRecords(Reader& reader, uint16_t count, std::vector<DnsRecord>* out) {
  for (uint16_t i = 0; i < count; ++i) {
    DnsRecord record;
    ZYGO_RETURN_IF_ERROR(reader.Name(&record.labels));
    uint16_t rdlength = 0;
    ZYGO_RETURN_IF_ERROR(reader.U16(&record.type));
    ZYGO_RETURN_IF_ERROR(reader.U16(&record.rclass));
    ZYGO_RETURN_IF_ERROR(reader.U32(&record.ttl));
    ZYGO_RETURN_IF_ERROR(reader.U16(&rdlength));
    ZYGO_RETURN_IF_ERROR(reader.Bytes(rdlength, &record.rdata));
    out->push_back(std::move(record));
  }
  return absl::OkStatus();
}

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v) {
    out_.push_back(static_cast<uint8_t>(v >> 8));
    out_.push_back(static_cast<uint8_t>(v));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void Bytes(absl::string_view s) { out_.insert(out_.end(), s.begin(), s.end()); }
  // Callers pass only names that came through Reader::Name or BuildDnsQuery's checks.
  void Name(const std::vector<std::string>& labels) {
    for (const std::string& label : labels) {
      U8(static_cast<uint8_t>(label.size()));
      Bytes(label);
    }
    U8(0);
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

void WriteReplyHeader(Writer& w, const DnsHeader& query, DnsRcode rcode, uint16_t qdcount,
                      uint16_t ancount, uint16_t arcount) {
  w.U16(query.id);
  w.U8(static_cast<uint8_t>(0x80 | (query.opcode & 0x0F) << 3 |
                            (query.recursion_desired ? 0x01 : 0)));
  w.U8(static_cast<uint8_t>(0x80 | (query.checking_disabled ? 0x10 : 0) |
                            (static_cast<uint8_t>(rcode) & 0x0F)));
  w.U16(qdcount);
  w.U16(ancount);
  w.U16(0);
  w.U16(arcount);
}

size_t NameWireLength(const std::vector<std::string>& labels) {
  size_t n = 1;
  for (const std::string& label : labels) n += 1 + label.size();
  return n;
}

bool IsHostnameByte(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_'; }

}  // namespace

size_t DnsQuery::MaxReplySize() const {
  if (!has_edns) return kDnsMaxUdpSize;
  return std::clamp<size_t>(edns_udp_size, kDnsMaxUdpSize, kDnsMaxEdnsReplySize);
}

std::optional<DnsHeader> ParseDnsHeader(absl::Span<const uint8_t> packet) {
  if (packet.size() < kHeaderSize) return std::nullopt;
  return HeaderFromBytes(packet);
}

absl::StatusOr<DnsMessage> ParseDnsMessage(absl::Span<const uint8_t> packet) {
  if (packet.size() < kHeaderSize) return Malformed("shorter than the 12-byte header");
  DnsMessage message;
  message.header = HeaderFromBytes(packet);
  Reader reader(packet);
  std::string skipped;
  ZYGO_RETURN_IF_ERROR(reader.Bytes(kHeaderSize, &skipped));
  for (uint16_t i = 0; i < message.header.qdcount; ++i) {
    DnsQuestion question;
    ZYGO_RETURN_IF_ERROR(reader.Name(&question.labels));
    ZYGO_RETURN_IF_ERROR(reader.U16(&question.qtype));
    ZYGO_RETURN_IF_ERROR(reader.U16(&question.qclass));
    message.questions.push_back(std::move(question));
  }
  ZYGO_RETURN_IF_ERROR(ReadRecords(reader, message.header.ancount, &message.answers));
  ZYGO_RETURN_IF_ERROR(ReadRecords(reader, message.header.nscount, &message.authorities));
  ZYGO_RETURN_IF_ERROR(ReadRecords(reader, message.header.arcount, &message.additionals));
  if (reader.remaining() != 0) return Malformed("trailing bytes after the last record");
  return message;
}

absl::StatusOr<DnsQuery> ParseDnsQuery(absl::Span<const uint8_t> packet) {
  ZYGO_ASSIGN_OR_RETURN(DnsMessage message, ParseDnsMessage(packet));
  if (message.header.is_response) return Malformed("QR is set in a query");
  if (message.questions.size() != 1) {
    return Malformed(
        absl::StrCat("a query needs exactly one question, not ", message.questions.size()));
  }
  if (!message.answers.empty() || !message.authorities.empty()) {
    return Malformed("a query with answer or authority records");
  }
  DnsQuery query;
  query.header = message.header;
  query.question = std::move(message.questions[0]);
  for (const DnsRecord& record : message.additionals) {
    if (record.type != kDnsTypeOpt) continue;
    // RFC 6891 6.1.1: one OPT at most, owned by the root.
    if (query.has_edns) return Malformed("more than one OPT record");
    if (!record.labels.empty()) return Malformed("OPT record not at the root");
    query.has_edns = true;
    query.edns_udp_size = record.rclass;
  }
  return query;
}

absl::StatusOr<std::string> NormalizeDnsName(const std::vector<std::string>& labels) {
  std::vector<std::string> lowered;
  lowered.reserve(labels.size());
  for (const std::string& label : labels) {
    if (label.empty() || label.size() > kDnsMaxLabelLength) {
      return absl::InvalidArgumentError("DNS label is empty or longer than 63 octets");
    }
    if (!std::all_of(label.begin(), label.end(), IsHostnameByte)) {
      return absl::InvalidArgumentError(
          "DNS label has a byte other than a letter, digit, '-' or '_'");
    }
    lowered.push_back(absl::AsciiStrToLower(label));
  }
  return absl::StrJoin(lowered, ".");
}

size_t DnsAnswersThatFit(const DnsQuery& query, absl::Span<const DnsAnswer> answers) {
  const size_t limit = query.MaxReplySize();
  size_t size = kHeaderSize + NameWireLength(query.question.labels) + 4 +
                (query.has_edns ? kOptRecordSize : 0);
  size_t fit = 0;
  for (const DnsAnswer& answer : answers) {
    size += kPointerSize + kRecordFixedSize + answer.rdata.size();
    if (size > limit) break;
    ++fit;
  }
  return fit;
}

std::vector<uint8_t> BuildDnsReply(const DnsQuery& query, DnsRcode rcode,
                                   absl::Span<const DnsAnswer> answers) {
  const size_t count = std::min<size_t>(DnsAnswersThatFit(query, answers), 0xFFFF);
  Writer w;
  WriteReplyHeader(w, query.header, rcode, 1, static_cast<uint16_t>(count), query.has_edns ? 1 : 0);
  w.Name(query.question.labels);
  w.U16(query.question.qtype);
  w.U16(query.question.qclass);
  for (size_t i = 0; i < count; ++i) {
    const DnsAnswer& answer = answers[i];
    w.U16(0xC000 | kHeaderSize);  // the question name always starts right after the header
    w.U16(answer.type);
    w.U16(kDnsClassIn);
    w.U32(answer.ttl);
    w.U16(static_cast<uint16_t>(answer.rdata.size()));
    w.Bytes(answer.rdata);
  }
  if (query.has_edns) {
    w.U8(0);  // root owner
    w.U16(kDnsTypeOpt);
    w.U16(static_cast<uint16_t>(kDnsMaxEdnsReplySize));  // our own UDP payload size
    w.U32(0);                                            // extended rcode 0, version 0, no DO
    w.U16(0);                                            // no options
  }
  return w.Take();
}

std::vector<uint8_t> BuildDnsHeaderOnlyReply(const DnsHeader& query_header, DnsRcode rcode) {
  Writer w;
  WriteReplyHeader(w, query_header, rcode, 0, 0, 0);
  return w.Take();
}

absl::StatusOr<std::vector<uint8_t>> BuildDnsQuery(uint16_t id, absl::string_view name,
                                                   uint16_t qtype) {
  std::vector<std::string> labels;
  if (!name.empty() && name != ".") {
    if (name.back() == '.') name.remove_suffix(1);
    labels = absl::StrSplit(name, '.');
  }
  for (const std::string& label : labels) {
    if (label.empty() || label.size() > kDnsMaxLabelLength) {
      return absl::InvalidArgumentError(absl::StrCat("bad DNS name: ", name));
    }
  }
  if (NameWireLength(labels) > kDnsMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("DNS name too long: ", name));
  }
  Writer w;
  w.U16(id);
  w.U8(0x01);  // RD
  w.U8(0);
  w.U16(1);
  w.U16(0);
  w.U16(0);
  w.U16(0);
  w.Name(labels);
  w.U16(qtype);
  w.U16(kDnsClassIn);
  return w.Take();
}

}  // namespace zygo::net
