// The sandbox firewall as data: table, sets, chains and rules, each rule a list of nftables
// expressions plus the nft(8) text it stands for. Built from a FirewallPlan without the
// kernel, so the rules can be read and tested unprivileged; nft_batch turns it into netlink.
#ifndef ZYGO_NET_INTERNAL_NFT_RULESET_H_
#define ZYGO_NET_INTERNAL_NFT_RULESET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/firewall_plan.h"
#include "net/ip_address.h"

namespace zygo::net::internal {

inline constexpr char kTableName[] = "zygo";  // family inet
inline constexpr char kAllowed4Set[] = "allowed4";
inline constexpr char kAllowed6Set[] = "allowed6";
inline constexpr char kOutputChain[] = "output";
inline constexpr char kRefusedChain[] = "refused";

enum class NftExprKind { kMeta, kCt, kPayload, kCmp, kBitwise, kLookup, kCounter, kVerdict };

// One nftables expression. Which fields count depends on `kind`:
//   kMeta/kCt:  key (NFT_META_*/NFT_CT_*) -> reg
//   kPayload:   base (NFT_PAYLOAD_*_HEADER), offset, len -> reg
//   kCmp:       reg op(key, NFT_CMP_*) data
//   kBitwise:   reg & data (mask) -> reg, len bytes
//   kLookup:    reg in set `name` (set id in `key`)
//   kVerdict:   key = NF_ACCEPT / NF_DROP / NFT_JUMP (to chain `name`)
struct NftExpr {
  NftExprKind kind = NftExprKind::kCounter;
  uint32_t key = 0;
  uint32_t reg = 0;
  uint32_t base = 0;
  uint32_t offset = 0;
  uint32_t len = 0;
  std::vector<uint8_t> data;
  std::string name;
};

struct NftRule {
  std::string chain;
  std::string text;  // nft(8) syntax, for descriptions and errors
  std::vector<NftExpr> exprs;
};

struct NftSet {
  std::string name;
  uint32_t id = 0;        // NFTA_SET_ID, so rules in the same batch can refer to it
  uint32_t key_type = 0;  // nft's datatype id of the concatenation, for `nft list`
  uint32_t key_len = 0;   // bytes, each field padded to 4
  std::string text;
};

struct NftChain {
  std::string name;
  bool base = false;    // hooked at output, priority filter
  uint32_t policy = 0;  // NF_ACCEPT / NF_DROP; base chains only
  std::string text;
};

struct NftRuleset {
  std::vector<NftSet> sets;
  std::vector<NftChain> chains;  // in creation order: jump targets first
  std::vector<NftRule> rules;    // in order, each appended to its chain
};

// The ruleset for `plan`; documented in net/firewall.h. Pure.
NftRuleset BuildRuleset(const FirewallPlan& plan);

// nft(8)-style listing of `ruleset` (`table inet zygo { ... }`). Pure.
std::string RulesetText(const NftRuleset& ruleset);

// The set and key for an allowed address and port: allowed4 with key addr(4) . port(2, big
// endian) . 2 zero bytes, or allowed6 with addr(16) . port . 2 zero bytes. `address` must be
// plain IPv4 or IPv6 (not IPv4-mapped). Pure.
struct NftElement {
  std::string set;
  std::vector<uint8_t> key;
  std::string text;  // "198.51.100.10 . 443"
};
NftElement AllowedElement(const IpAddress& address, uint16_t port);

}  // namespace zygo::net::internal

#endif  // ZYGO_NET_INTERNAL_NFT_RULESET_H_
