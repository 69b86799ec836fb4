#include "testing/fake_dns.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>

#include <utility>
#include <vector>

#include "absl/strings/str_join.h"

namespace zygo::testing {

FakeDns::FakeDns(base::UniqueFd socket, std::map<std::string, std::string> records)
    : socket_(std::move(socket)), records_(std::move(records)) {
  thread_ = std::thread([this] { Serve(); });
}

FakeDns::~FakeDns() {
  stop_ = true;
  thread_.join();
}

int FakeDns::QueriesFor(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[name];
}

int FakeDns::Queries() {
  std::lock_guard<std::mutex> lock(mu_);
  int total = 0;
  for (const auto& [name, count] : counts_) total += count;
  return total;
}

void FakeDns::Serve() {
  // The socket is non-blocking: wait in poll, with a timeout so `stop_` is seen.
  while (!stop_) {
    pollfd pfd = {socket_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 50) <= 0) continue;
    uint8_t question[512];
    sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);
    const ssize_t n = recvfrom(socket_.get(), question, sizeof(question), 0,
                               reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (n >= 17) {
      Answer(question, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&peer), peer_len);
    }
  }
}

void FakeDns::Answer(const uint8_t* q, size_t n, const sockaddr* peer, socklen_t peer_len) {
  size_t i = 12;
  std::vector<std::string> labels;
  while (i < n && q[i] != 0 && i + 1 + q[i] <= n) {
    std::string label(reinterpret_cast<const char*>(q + i + 1), q[i]);
    for (char& c : label) c = static_cast<char>(tolower(c));
    labels.push_back(label);
    i += 1 + q[i];
  }
  if (i + 5 > n) return;
  const uint16_t qtype = static_cast<uint16_t>(q[i + 1] << 8 | q[i + 2]);
  const size_t question_end = i + 5;
  const std::string name = absl::StrJoin(labels, ".");
  {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[name]++;
  }
  std::vector<uint8_t> r(q, q + question_end);
  r[2] = 0x84 | (q[2] & 0x01);  // QR, AA, RD as asked
  r[3] = 0x80;                  // RA, NOERROR
  r[6] = r[7] = r[8] = r[9] = r[10] = r[11] = 0;
  auto it = records_.find(name);
  if (it == records_.end()) {
    r[3] = 0x83;  // NXDOMAIN
  } else if (qtype == 1) {
    r[7] = 1;
    const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};  // TTL 60 s
    r.insert(r.end(), rr, rr + sizeof(rr));
    in_addr addr;
    inet_pton(AF_INET, it->second.c_str(), &addr);
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&addr);
    r.insert(r.end(), bytes, bytes + 4);
  }
  sendto(socket_.get(), r.data(), r.size(), 0, peer, peer_len);
}

}  // namespace zygo::testing
