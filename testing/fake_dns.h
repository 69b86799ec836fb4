// A tiny authoritative DNS server for the fake internet (testing/fake_internet.h): A
// records for a fixed table of .test names, NXDOMAIN for the rest, and a count of the
// questions it saw per name.
#ifndef ZYGO_TESTING_FAKE_DNS_H_
#define ZYGO_TESTING_FAKE_DNS_H_

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/unique_fd.h"

namespace zygo::testing {

// Serves `records` (name -> IPv4 address) on one bound UDP socket, from a thread of its
// own until destroyed.
class FakeDns {
 public:
  FakeDns(base::UniqueFd socket, std::map<std::string, std::string> records);
  ~FakeDns();
  FakeDns(const FakeDns&) = delete;
  FakeDns& operator=(const FakeDns&) = delete;

  int QueriesFor(const std::string& name);
  int Queries();

 private:
  void Serve();
  void Answer(const uint8_t* question, size_t size, const sockaddr* peer, socklen_t peer_len);

  base::UniqueFd socket_;
  const std::map<std::string, std::string> records_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, int> counts_;
  std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_FAKE_DNS_H_
