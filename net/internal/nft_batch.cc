// nftables messages through libnftnl, sent and acknowledged through libmnl.
//
// TODO(issue 4): send/recv/poll on the netlink socket belong in core/base/sys/ (STYLE.md
// E.14, the netlink family); they live here until that file exists.
#include "net/internal/nft_batch.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::net::internal {
namespace {

// Room reserved for one message while libnftnl writes it (it does not bounds-check); our
// largest, a rule of a dozen expressions, is under 1 KiB.
constexpr size_t kMessageRoom = 8192;
// The kernel answers synchronously, inside our send(); this only bounds a broken socket.
constexpr int kReplyTimeoutMs = 5000;
constexpr size_t kReceiveBufferSize = 65536;

template <typename T, void (*Free)(const T*)>
struct Deleter {
  void operator()(T* object) const { Free(object); }
};
using TablePtr = std::unique_ptr<nftnl_table, Deleter<nftnl_table, nftnl_table_free>>;
using ChainPtr = std::unique_ptr<nftnl_chain, Deleter<nftnl_chain, nftnl_chain_free>>;
using RulePtr = std::unique_ptr<nftnl_rule, Deleter<nftnl_rule, nftnl_rule_free>>;
using SetPtr = std::unique_ptr<nftnl_set, Deleter<nftnl_set, nftnl_set_free>>;

nftnl_expr* ToNftnl(const NftExpr& expr) {
  nftnl_expr* out = nullptr;
  switch (expr.kind) {
    case NftExprKind::kMeta:
      out = nftnl_expr_alloc("meta");
      nftnl_expr_set_u32(out, NFTNL_EXPR_META_KEY, expr.key);
      nftnl_expr_set_u32(out, NFTNL_EXPR_META_DREG, expr.reg);
      break;
    case NftExprKind::kCt:
      out = nftnl_expr_alloc("ct");
      nftnl_expr_set_u32(out, NFTNL_EXPR_CT_KEY, expr.key);
      nftnl_expr_set_u32(out, NFTNL_EXPR_CT_DREG, expr.reg);
      break;
    case NftExprKind::kPayload:
      out = nftnl_expr_alloc("payload");
      nftnl_expr_set_u32(out, NFTNL_EXPR_PAYLOAD_BASE, expr.base);
      nftnl_expr_set_u32(out, NFTNL_EXPR_PAYLOAD_OFFSET, expr.offset);
      nftnl_expr_set_u32(out, NFTNL_EXPR_PAYLOAD_LEN, expr.len);
      nftnl_expr_set_u32(out, NFTNL_EXPR_PAYLOAD_DREG, expr.reg);
      break;
    case NftExprKind::kCmp:
      out = nftnl_expr_alloc("cmp");
      nftnl_expr_set_u32(out, NFTNL_EXPR_CMP_SREG, expr.reg);
      nftnl_expr_set_u32(out, NFTNL_EXPR_CMP_OP, expr.key);
      nftnl_expr_set(out, NFTNL_EXPR_CMP_DATA, expr.data.data(), expr.data.size());
      break;
    case NftExprKind::kBitwise: {
      out = nftnl_expr_alloc("bitwise");
      const std::vector<uint8_t> zero(expr.data.size(), 0);
      nftnl_expr_set_u32(out, NFTNL_EXPR_BITWISE_SREG, expr.reg);
      nftnl_expr_set_u32(out, NFTNL_EXPR_BITWISE_DREG, expr.reg);
      nftnl_expr_set_u32(out, NFTNL_EXPR_BITWISE_LEN, expr.len);
      nftnl_expr_set(out, NFTNL_EXPR_BITWISE_MASK, expr.data.data(), expr.data.size());
      nftnl_expr_set(out, NFTNL_EXPR_BITWISE_XOR, zero.data(), zero.size());
      break;
    }
    case NftExprKind::kLookup:
      out = nftnl_expr_alloc("lookup");
      nftnl_expr_set_u32(out, NFTNL_EXPR_LOOKUP_SREG, expr.reg);
      nftnl_expr_set_str(out, NFTNL_EXPR_LOOKUP_SET, expr.name.c_str());
      nftnl_expr_set_u32(out, NFTNL_EXPR_LOOKUP_SET_ID, expr.key);
      break;
    case NftExprKind::kCounter:
      out = nftnl_expr_alloc("counter");
      break;
    case NftExprKind::kVerdict:
      out = nftnl_expr_alloc("immediate");
      nftnl_expr_set_u32(out, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
      nftnl_expr_set_u32(out, NFTNL_EXPR_IMM_VERDICT, expr.key);
      if (!expr.name.empty()) nftnl_expr_set_str(out, NFTNL_EXPR_IMM_CHAIN, expr.name.c_str());
      break;
  }
  return out;
}

void TablePayload(nlmsghdr* nlh) {
  TablePtr table(nftnl_table_alloc());
  nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, kTableName);
  nftnl_table_nlmsg_build_payload(nlh, table.get());
}

SetPtr ElementSet(const NftElement& element, std::optional<uint64_t> timeout_ms) {
  SetPtr set(nftnl_set_alloc());
  nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, kTableName);
  nftnl_set_set_str(set.get(), NFTNL_SET_NAME, element.set.c_str());
  nftnl_set_elem* elem = nftnl_set_elem_alloc();  // owned by `set` once added
  nftnl_set_elem_set(elem, NFTNL_SET_ELEM_KEY, element.key.data(), element.key.size());
  if (timeout_ms.has_value()) nftnl_set_elem_set_u64(elem, NFTNL_SET_ELEM_TIMEOUT, *timeout_ms);
  nftnl_set_elem_add(set.get(), elem);
  return set;
}

bool IsMissingFeature(int err) {
  return err == EOPNOTSUPP || err == EAFNOSUPPORT || err == EPROTONOSUPPORT;
}

// The kernel's answer to one message.
struct KernelError {
  uint32_t seq = 0;
  int err = 0;
};

absl::Status Send(int fd, const void* data, size_t size, const char* what) {
  ssize_t sent;
  do {
    sent = send(fd, data, size, 0);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0)
    return base::ErrnoStatus(errno, absl::StrCat("send(NETLINK_NETFILTER, ", what, ")"));
  return absl::OkStatus();
}

// Receives one datagram from the kernel (port id 0), waiting at most kReplyTimeoutMs.
absl::StatusOr<size_t> ReceiveFromKernel(int fd, std::vector<char>& buffer) {
  for (;;) {
    pollfd pfd = {fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, kReplyTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return base::ErrnoStatus(errno, "poll(NETLINK_NETFILTER)");
    if (ready == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("nftables: no reply from the kernel within ", kReplyTimeoutMs, " ms"));
    }
    sockaddr_nl from = {};
    socklen_t from_len = sizeof(from);
    const ssize_t got = recvfrom(fd, buffer.data(), buffer.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // ENOBUFS: the socket's receive queue overflowed and replies were lost.
    if (got < 0) return base::ErrnoStatus(errno, "recv(NETLINK_NETFILTER)");
    if (from.nl_pid != 0) continue;  // not from the kernel
    return static_cast<size_t>(got);
  }
}

// Reads replies until `done_seq` has had its ACK or error, or `batch_seq` (the BATCH_BEGIN,
// if any) got an error, which means the kernel refused the batch as a whole. Only numbers in
// [first, done_seq] (and `batch_seq`) count; others are late replies to earlier calls. Data
// messages go to `on_data`. Returns the first kernel error by sequence number, if any.
//
// nfnetlink reports every failed message of a batch whether or not it asked for an ACK,
// keeps going after a failure, and delivers all reports in message order after the batch
// (nfnetlink_rcv_batch), so the reply to the last message comes last. Asking only the last
// message for an ACK keeps the replies to a handful however long the ruleset is, so they
// cannot overflow the socket's receive buffer.
absl::StatusOr<std::optional<KernelError>> AwaitReplies(
    int fd, uint32_t first, uint32_t done_seq, std::optional<uint32_t> batch_seq,
    const std::function<void(const nlmsghdr*)>& on_data) {
  std::optional<KernelError> first_error;
  std::vector<char> buffer(kReceiveBufferSize);
  for (bool done = false; !done;) {
    ZYGO_ASSIGN_OR_RETURN(size_t size, ReceiveFromKernel(fd, buffer));
    int left = static_cast<int>(size);
    for (const nlmsghdr* nlh = reinterpret_cast<const nlmsghdr*>(buffer.data());
         mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
      const uint32_t seq = nlh->nlmsg_seq;
      const bool is_batch = batch_seq.has_value() && seq == *batch_seq;
      if (!is_batch && (seq < first || seq > done_seq)) continue;
      if (nlh->nlmsg_type != NLMSG_ERROR) {
        if (on_data) on_data(nlh);
        continue;
      }
      if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) continue;
      const auto* error = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
      if (error->error != 0 && (!first_error.has_value() || is_batch || seq < first_error->seq)) {
        first_error = KernelError{seq, -error->error};
      }
      if ((is_batch && error->error != 0) || seq == done_seq) done = true;
    }
  }
  return first_error;
}

}  // namespace

NftBatch::NftBatch(uint32_t first_seq) : first_seq_(first_seq), seq_(first_seq) {
  buffer_.resize(kMessageRoom);
  const nlmsghdr* nlh = nftnl_batch_begin(buffer_.data(), seq_++);
  buffer_.resize(NLMSG_ALIGN(nlh->nlmsg_len));
}

void NftBatch::Add(uint16_t type, uint16_t flags, std::string what,
                   const std::function<void(nlmsghdr*)>& payload) {
  const size_t offset = buffer_.size();
  buffer_.resize(offset + kMessageRoom);
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buffer_.data() + offset, type, NFPROTO_INET, flags, seq_++);
  payload(nlh);
  buffer_.resize(offset + NLMSG_ALIGN(nlh->nlmsg_len));
  messages_.push_back({type, std::move(what)});
  last_offset_ = offset;
}

void NftBatch::AddRuleset(const NftRuleset& ruleset) {
  const std::string table = absl::StrCat("table inet ", kTableName);
  // Adding an existing table without NLM_F_EXCL is a no-op, so the delete that follows
  // never fails with ENOENT; all three are one transaction, so no packet sees a gap.
  Add(NFT_MSG_NEWTABLE, NLM_F_CREATE, absl::StrCat("adding ", table), TablePayload);
  Add(NFT_MSG_DELTABLE, 0, absl::StrCat("deleting the previous ", table), TablePayload);
  Add(NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL, absl::StrCat("creating ", table), TablePayload);
  for (const NftSet& set : ruleset.sets) {
    Add(NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_EXCL,
        absl::StrCat("creating set inet ", kTableName, " ", set.name, " { ", set.text, " }"),
        [&set](nlmsghdr* nlh) {
          SetPtr out(nftnl_set_alloc());
          nftnl_set_set_str(out.get(), NFTNL_SET_TABLE, kTableName);
          nftnl_set_set_str(out.get(), NFTNL_SET_NAME, set.name.c_str());
          nftnl_set_set_u32(out.get(), NFTNL_SET_FAMILY, NFPROTO_INET);
          nftnl_set_set_u32(out.get(), NFTNL_SET_ID, set.id);
          nftnl_set_set_u32(out.get(), NFTNL_SET_KEY_TYPE, set.key_type);
          nftnl_set_set_u32(out.get(), NFTNL_SET_KEY_LEN, set.key_len);
          nftnl_set_set_u32(out.get(), NFTNL_SET_FLAGS, NFT_SET_TIMEOUT);
          nftnl_set_nlmsg_build_payload(nlh, out.get());
        });
  }
  for (const NftChain& chain : ruleset.chains) {
    Add(NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL,
        absl::StrCat("creating chain inet ", kTableName, " ", chain.name,
                     chain.base ? absl::StrCat(" { ", chain.text, " }") : ""),
        [&chain](nlmsghdr* nlh) {
          ChainPtr out(nftnl_chain_alloc());
          nftnl_chain_set_str(out.get(), NFTNL_CHAIN_TABLE, kTableName);
          nftnl_chain_set_str(out.get(), NFTNL_CHAIN_NAME, chain.name.c_str());
          if (chain.base) {
            nftnl_chain_set_str(out.get(), NFTNL_CHAIN_TYPE, "filter");
            nftnl_chain_set_u32(out.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
            nftnl_chain_set_s32(out.get(), NFTNL_CHAIN_PRIO, 0);  // "priority filter"
            nftnl_chain_set_u32(out.get(), NFTNL_CHAIN_POLICY, chain.policy);
          }
          nftnl_chain_nlmsg_build_payload(nlh, out.get());
        });
  }
  for (const NftRule& rule : ruleset.rules) {
    Add(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND,
        absl::StrCat("adding rule \"", rule.text, "\" to chain inet ", kTableName, " ", rule.chain),
        [&rule](nlmsghdr* nlh) {
          RulePtr out(nftnl_rule_alloc());
          nftnl_rule_set_str(out.get(), NFTNL_RULE_TABLE, kTableName);
          nftnl_rule_set_str(out.get(), NFTNL_RULE_CHAIN, rule.chain.c_str());
          nftnl_rule_set_u32(out.get(), NFTNL_RULE_FAMILY, NFPROTO_INET);
          for (const NftExpr& expr : rule.exprs) nftnl_rule_add_expr(out.get(), ToNftnl(expr));
          nftnl_rule_nlmsg_build_payload(nlh, out.get());
        });
  }
}

void NftBatch::AddElement(const NftElement& element, uint64_t timeout_ms) {
  Add(NFT_MSG_NEWSETELEM, NLM_F_CREATE | NLM_F_EXCL,
      absl::StrCat("adding element ", element.text, " timeout ", timeout_ms, "ms to set inet ",
                   kTableName, " ", element.set),
      [&element, timeout_ms](nlmsghdr* nlh) {
        nftnl_set_elems_nlmsg_build_payload(nlh, ElementSet(element, timeout_ms).get());
      });
}

void NftBatch::DeleteElement(const NftElement& element) {
  Add(NFT_MSG_DELSETELEM, 0,
      absl::StrCat("deleting element ", element.text, " from set inet ", kTableName, " ",
                   element.set),
      [&element](nlmsghdr* nlh) {
        nftnl_set_elems_nlmsg_build_payload(nlh, ElementSet(element, std::nullopt).get());
      });
}

const std::vector<char>& NftBatch::Finish() {
  if (!finished_) {
    if (!messages_.empty()) {
      reinterpret_cast<nlmsghdr*>(buffer_.data() + last_offset_)->nlmsg_flags |= NLM_F_ACK;
    }
    const size_t offset = buffer_.size();
    buffer_.resize(offset + kMessageRoom);
    const nlmsghdr* nlh = nftnl_batch_end(buffer_.data() + offset, seq_);
    buffer_.resize(offset + NLMSG_ALIGN(nlh->nlmsg_len));
    finished_ = true;
  }
  return buffer_;
}

const NftBatch::Message* NftBatch::Find(uint32_t seq) const {
  if (seq <= first_seq_ || seq - first_seq_ > messages_.size()) return nullptr;
  return &messages_[seq - first_seq_ - 1];
}

absl::Status NftBatch::ErrorFor(uint32_t seq, int err) const {
  const Message* message = Find(seq);
  const std::string what = message != nullptr ? message->what : "the batch transaction";
  const std::string detail =
      absl::StrCat(what, ": ", strerror(err), " (", base::ErrnoName(err), ")");
  // A rule's ENOENT, once its chain was created, is the kernel not finding an expression
  // type (nft_expr_type_get after request_module), e.g. nft_ct compiled out.
  const bool missing_expression =
      err == ENOENT && message != nullptr && message->type == NFT_MSG_NEWRULE;
  if (IsMissingFeature(err) || missing_expression) {
    return absl::UnimplementedError(absl::StrCat(
        "nftables is not available: ", detail,
        missing_expression ? "; the kernel likely lacks a module for one of its expressions "
                             "(nft_ct, nft_meta, nft_payload, nft_lookup...)"
                           : ""));
  }
  if (err == EPERM && message == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(
        "nftables: ", detail,
        "; the socket's opener needs CAP_NET_ADMIN over the sandbox's network namespace"));
  }
  return base::ErrnoStatus(err, absl::StrCat("nftables: ", what, " (", base::ErrnoName(err), ")"));
}

absl::Status SendBatch(int netlink_fd, NftBatch& batch) {
  const std::vector<char>& bytes = batch.Finish();
  ZYGO_RETURN_IF_ERROR(Send(netlink_fd, bytes.data(), bytes.size(), "batch"));
  ZYGO_ASSIGN_OR_RETURN(
      std::optional<KernelError> error,
      AwaitReplies(netlink_fd, batch.begin_seq() + 1, batch.last_seq(), batch.begin_seq(), {}));
  if (error.has_value()) return batch.ErrorFor(error->seq, error->err);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint64_t>> GetElementExpiration(int netlink_fd,
                                                             const NftElement& element,
                                                             uint32_t seq) {
  std::vector<char> buffer(kMessageRoom);
  nlmsghdr* nlh =
      nftnl_nlmsg_build_hdr(buffer.data(), NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_ACK, seq);
  nftnl_set_elems_nlmsg_build_payload(nlh, ElementSet(element, std::nullopt).get());
  ZYGO_RETURN_IF_ERROR(Send(netlink_fd, buffer.data(), nlh->nlmsg_len, "GETSETELEM"));

  std::optional<uint64_t> expiration;
  const auto on_data = [&expiration](const nlmsghdr* reply) {
    if (reply->nlmsg_type != ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM)) return;
    SetPtr set(nftnl_set_alloc());
    if (nftnl_set_elems_nlmsg_parse(reply, set.get()) < 0) return;
    nftnl_set_elems_iter* iter = nftnl_set_elems_iter_create(set.get());
    if (iter == nullptr) return;
    nftnl_set_elem* elem = nftnl_set_elems_iter_cur(iter);
    if (elem != nullptr && nftnl_set_elem_is_set(elem, NFTNL_SET_ELEM_EXPIRATION)) {
      expiration = nftnl_set_elem_get_u64(elem, NFTNL_SET_ELEM_EXPIRATION);
    }
    nftnl_set_elems_iter_destroy(iter);
  };
  ZYGO_ASSIGN_OR_RETURN(std::optional<KernelError> error,
                        AwaitReplies(netlink_fd, seq, seq, std::nullopt, on_data));
  if (error.has_value()) {
    if (error->err == ENOENT) return std::optional<uint64_t>();  // expired or never there
    return base::ErrnoStatus(error->err, absl::StrCat("nftables: getting element ", element.text,
                                                      " of set inet ", kTableName, " ", element.set,
                                                      " (", base::ErrnoName(error->err), ")"));
  }
  // Present without an expiration would mean no timeout; treat it as never expiring.
  return expiration.has_value() ? expiration : std::optional<uint64_t>(UINT64_MAX);
}

uint32_t NextSeqBase() {
  timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  // Microseconds, kept well below 2^32 so a batch's numbers never wrap.
  const uint64_t micros = static_cast<uint64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
  return static_cast<uint32_t>(micros % 0x70000000u) + 1;
}

}  // namespace zygo::net::internal
