// nftables over netlink with libnftnl and libmnl: builds the messages for a ruleset or a set
// element into one batch (one kernel transaction), sends it on a NETLINK_NETFILTER socket
// and waits for the kernel's verdict on every message.
#ifndef ZYGO_NET_INTERNAL_NFT_BATCH_H_
#define ZYGO_NET_INTERNAL_NFT_BATCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "net/internal/nft_ruleset.h"

struct nlmsghdr;

namespace zygo::net::internal {

// One batch: BATCH_BEGIN, the added messages, BATCH_END. The last message asks for an ACK
// (the kernel reports failures of the others anyway), and each remembers what it does
// ("creating set inet zygo allowed4 ...") for error messages.
class NftBatch {
 public:
  // `first_seq` numbers the BATCH_BEGIN; messages take the following numbers.
  explicit NftBatch(uint32_t first_seq);

  // Replaces any table inet zygo with `ruleset`, atomically: add table (no-op if present),
  // delete table, then create table, sets, chains and rules.
  void AddRuleset(const NftRuleset& ruleset);
  // NEWSETELEM with NLM_F_EXCL (EEXIST if present) and a timeout in milliseconds.
  void AddElement(const NftElement& element, uint64_t timeout_ms);
  void DeleteElement(const NftElement& element);

  // The bytes to send, BATCH_END included; call once, after the last Add.
  const std::vector<char>& Finish();

  // BATCH_BEGIN's number; the messages follow it, up to last_seq().
  uint32_t begin_seq() const { return first_seq_; }
  uint32_t last_seq() const { return first_seq_ + static_cast<uint32_t>(messages_.size()); }
  // The Status for the kernel's errno `err` on message `seq`: names what the message did,
  // and is Unimplemented ("nftables is not available: ...") when the kernel lacks a part of
  // nf_tables.
  absl::Status ErrorFor(uint32_t seq, int err) const;

 private:
  struct Message {
    uint16_t type;     // NFT_MSG_*
    std::string what;  // "creating set inet zygo allowed4 { ... }"
  };

  // Appends one message: the header via nftnl_nlmsg_build_hdr, then `payload` fills it.
  void Add(uint16_t type, uint16_t flags, std::string what,
           const std::function<void(nlmsghdr*)>& payload);
  const Message* Find(uint32_t seq) const;  // nullptr for BATCH_BEGIN and unknown numbers

  uint32_t first_seq_;
  uint32_t seq_;
  std::vector<char> buffer_;
  std::vector<Message> messages_;  // message i has number first_seq_ + 1 + i
  size_t last_offset_ = 0;         // where the last message starts in buffer_
  bool finished_ = false;
};

// Sends `batch` on the NETLINK_NETFILTER socket `netlink_fd` (borrowed) and reads replies
// until the kernel has answered the last message. OK only if the transaction committed.
// Otherwise the first error, naming its message and errno; Unimplemented ("nftables is not
// available: ...") when the kernel lacks nf_tables, the inet family or an expression.
// Parent side; not safe to call concurrently on one socket.
absl::Status SendBatch(int netlink_fd, NftBatch& batch);

// Looks up `element` with GETSETELEM (not a batch message): the milliseconds left before it
// expires, or nullopt when it is not in the set. Same caller rules as SendBatch.
absl::StatusOr<std::optional<uint64_t>> GetElementExpiration(int netlink_fd,
                                                             const NftElement& element,
                                                             uint32_t seq);

// A sequence number base that differs between calls, so a late reply to an earlier call on
// the same socket is never taken for one of ours.
uint32_t NextSeqBase();

}  // namespace zygo::net::internal

#endif  // ZYGO_NET_INTERNAL_NFT_BATCH_H_
