// The fake internet's TCP servers (testing/fake_internet.h): on each listener, a server
// that accepts and closes, or a byte source that reads an 8-byte big-endian count and
// sends that many zero bytes, then closes.
#ifndef ZYGO_TESTING_FAKE_TCP_SERVERS_H_
#define ZYGO_TESTING_FAKE_TCP_SERVERS_H_

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/unique_fd.h"

namespace zygo::testing {

enum class TcpService {
  kAcceptAndClose,  // a connect probe's peer; cheap enough for thousands of connects
  kByteSource,      // throughput: what is asked for, over one connection
};

// Serves the listeners from a thread of its own (and one per byte-source connection)
// until destroyed; the destructor stops and joins them all, even mid-send.
class FakeTcpServers {
 public:
  explicit FakeTcpServers(std::vector<std::pair<base::UniqueFd, TcpService>> listeners);
  ~FakeTcpServers();
  FakeTcpServers(const FakeTcpServers&) = delete;
  FakeTcpServers& operator=(const FakeTcpServers&) = delete;

 private:
  void Accept();
  void SendAsked(base::UniqueFd connection);

  std::vector<std::pair<base::UniqueFd, TcpService>> listeners_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> senders_;  // under mu_
  std::thread acceptor_;              // last: it starts once everything above exists
};

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_FAKE_TCP_SERVERS_H_
