// Request schedules and reply checks for the warm benches.
#include "bench/warm/warm_driver.h"

#include <errno.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::bench {
namespace {

int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntilNs(int64_t deadline_ns) {
  struct timespec ts;
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

absl::Status BadReply(int k, const std::string& reply, absl::string_view why) {
  return absl::InternalError(absl::StrCat("reply ", k + 1, " ", why, ": ", reply.substr(0, 1500)));
}

// replies[k] parsed, if it is an ok reply with the handler's result for event k.
absl::StatusOr<nlohmann::json> ParseOkReply(
    const std::vector<std::string>& replies, size_t k,
    const std::function<bool(const nlohmann::json&, int)>& matches) {
  nlohmann::json reply = nlohmann::json::parse(replies[k], nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) return BadReply(k, replies[k], "is not JSON");
  if (reply.value("ok", false) != true) return BadReply(k, replies[k], "is not ok");
  if (!matches(reply["result"], static_cast<int>(k))) {
    return BadReply(k, replies[k], "is not the handler's result for its event");
  }
  return reply;
}

}  // namespace

absl::StatusOr<OpenLoopResult> RunOpenLoop(int first_index, int requests, double rate_per_s,
                                           const CallFn& call) {
  if (requests < 1 || rate_per_s <= 0) return absl::InvalidArgumentError("empty schedule");
  OpenLoopResult result;
  result.latency_ms.reserve(requests);
  result.sent_ns.reserve(requests);
  result.replies.reserve(requests);
  const double interval_ns = 1e9 / rate_per_s;
  const int64_t start = NowNs();
  for (int k = 0; k < requests; ++k) {
    const int64_t due = start + static_cast<int64_t>(k * interval_ns);
    if (NowNs() < due) {
      SleepUntilNs(due);
    } else if (k > 0) {
      ++result.late;
    }
    const int64_t sent = NowNs();
    absl::StatusOr<std::string> reply = call(first_index + k);
    const int64_t received = NowNs();
    if (!reply.ok()) {
      return absl::Status(reply.status().code(),
                          absl::StrCat("request ", k + 1, ": ", reply.status().message()));
    }
    result.latency_ms.push_back((received - sent) / 1e6);
    result.sent_ns.push_back(sent);
    result.replies.push_back(*std::move(reply));
  }
  result.seconds = (NowNs() - start) / 1e9;
  return result;
}

absl::StatusOr<ClosedLoopResult> RunClosedLoop(
    int connections, double seconds, const std::function<absl::StatusOr<CallFn>(int)>& make_call) {
  std::vector<CallFn> calls;
  for (int t = 0; t < connections; ++t) {
    absl::StatusOr<CallFn> call = make_call(t);
    if (!call.ok()) return call.status();
    calls.push_back(*std::move(call));
  }
  std::mutex mu;
  absl::Status first_error;
  std::vector<std::vector<double>> latencies(connections);
  std::atomic<bool> stop{false};
  const int64_t start = NowNs();
  const int64_t end = start + static_cast<int64_t>(seconds * 1e9);
  std::vector<int64_t> last_reply(connections, start);
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load(std::memory_order_relaxed) && NowNs() < end; ++i) {
        const int64_t sent = NowNs();
        absl::StatusOr<std::string> reply = calls[t](i);
        const int64_t received = NowNs();
        if (!reply.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) {
            first_error = absl::Status(reply.status().code(),
                                       absl::StrCat("connection ", t + 1, ", request ", i + 1, ": ",
                                                    reply.status().message()));
          }
          stop = true;
          return;
        }
        latencies[t].push_back((received - sent) / 1e6);
        last_reply[t] = received;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (!first_error.ok()) return first_error;
  ClosedLoopResult result;
  int64_t finish = start;
  for (int t = 0; t < connections; ++t) {
    result.latency_ms.insert(result.latency_ms.end(), latencies[t].begin(), latencies[t].end());
    finish = std::max(finish, last_reply[t]);
  }
  result.completed = static_cast<int64_t>(result.latency_ms.size());
  result.seconds = (finish - start) / 1e9;
  return result;
}

void AppendOpenLoop(OpenLoopResult* into, OpenLoopResult part) {
  into->latency_ms.insert(into->latency_ms.end(), part.latency_ms.begin(), part.latency_ms.end());
  into->sent_ns.insert(into->sent_ns.end(), part.sent_ns.begin(), part.sent_ns.end());
  for (std::string& reply : part.replies) into->replies.push_back(std::move(reply));
  into->late += part.late;
  into->seconds += part.seconds;
}

absl::StatusOr<std::vector<double>> MeasureForkFloor(int forks) {
  std::vector<double> samples;
  samples.reserve(forks);
  for (int i = 0; i < forks; ++i) {
    const int64_t start = NowNs();
    pid_t pid = fork();
    if (pid < 0) return base::ErrnoStatus(errno, "fork()");
    if (pid == 0) _exit(0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return base::ErrnoStatus(errno, absl::StrCat("waitpid(", pid, ")"));
    }
    samples.push_back((NowNs() - start) / 1e3);
  }
  return samples;
}

absl::Status CheckExecReplies(const std::vector<std::string>& replies,
                              const std::function<bool(const nlohmann::json&, int)>& matches,
                              PhaseSamples* phases) {
  for (size_t k = 0; k < replies.size(); ++k) {
    ZYGO_ASSIGN_OR_RETURN(nlohmann::json reply, ParseOkReply(replies, k, matches));
    const nlohmann::json& t = reply["timings_us"];
    if (!t.is_object()) return BadReply(k, replies[k], "has no timings_us");
    phases->fork_us.push_back(t.value("fork", 0.0));
    phases->admit_us.push_back(t.value("admit", 0.0));
    phases->run_us.push_back(t.value("run", 0.0));
    phases->reply_us.push_back(t.value("reply", 0.0));
    phases->total_us.push_back(t.value("total", 0.0));
  }
  return absl::OkStatus();
}

absl::Status CheckPeerReplies(const std::vector<std::string>& replies,
                              const std::function<bool(const nlohmann::json&, int)>& matches) {
  for (size_t k = 0; k < replies.size(); ++k) {
    ZYGO_RETURN_IF_ERROR(ParseOkReply(replies, k, matches).status());
  }
  return absl::OkStatus();
}

}  // namespace zygo::bench
