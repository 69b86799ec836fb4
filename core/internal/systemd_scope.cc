#include "core/internal/systemd_scope.h"

#include <systemd/sd-bus.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/status_macros.h"
#include "core/internal/cgroup_fs.h"
#include "core/internal/systemd_manager.h"

namespace zygo::core::internal {
namespace {

constexpr char kService[] = "org.freedesktop.systemd1";
constexpr char kObject[] = "/org/freedesktop/systemd1";
constexpr char kManager[] = "org.freedesktop.systemd1.Manager";

struct BusCloser {
  void operator()(sd_bus* bus) const { sd_bus_flush_close_unref(bus); }
};
using Bus = std::unique_ptr<sd_bus, BusCloser>;

struct MessageUnref {
  void operator()(sd_bus_message* message) const { sd_bus_message_unref(message); }
};
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;

struct SlotUnref {
  void operator()(sd_bus_slot* slot) const { sd_bus_slot_unref(slot); }
};
using Slot = std::unique_ptr<sd_bus_slot, SlotUnref>;

// sd-bus returns -errno.
absl::Status BusError(int rc, absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(-rc)));
}

struct Connection {
  Bus bus;
  bool direct = false;  // to the manager itself, not through a bus daemon
};

absl::StatusOr<Connection> Connect(SystemdManager manager) {
  sd_bus* raw = nullptr;
  const std::string socket = SystemdPrivateSocket(manager);
  if (PathExists(socket)) {
    int rc = sd_bus_new(&raw);
    if (rc < 0) return BusError(rc, "sd_bus_new");
    Bus bus(raw);
    rc = sd_bus_set_address(bus.get(), absl::StrCat("unix:path=", socket).c_str());
    if (rc >= 0) rc = sd_bus_start(bus.get());
    if (rc >= 0) return Connection{std::move(bus), true};
  }
  const int rc =
      manager == SystemdManager::kSystem ? sd_bus_open_system(&raw) : sd_bus_open_user(&raw);
  if (rc < 0) {
    return BusError(
        rc, absl::StrCat("connecting to systemd's ", SystemdManagerName(manager), " manager (",
                         socket, " or the D-Bus ",
                         manager == SystemdManager::kSystem ? "system" : "session", " bus)"));
  }
  return Connection{Bus(raw), false};
}

struct JobWait {
  std::string job;     // the object path StartTransientUnit returned
  std::string result;  // JobRemoved's result for it, once seen
};

int OnJobRemoved(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* wait = static_cast<JobWait*>(userdata);
  uint32_t id = 0;
  const char* path = nullptr;
  const char* unit = nullptr;
  const char* result = nullptr;
  if (sd_bus_message_read(message, "uoss", &id, &path, &unit, &result) < 0) return 0;
  if (!wait->job.empty() && wait->job == path) wait->result = result;
  return 0;
}

absl::StatusOr<Message> NewStartTransientUnit(sd_bus* bus, const SystemdScopeRequest& request) {
  sd_bus_message* raw = nullptr;
  int rc =
      sd_bus_message_new_method_call(bus, &raw, kService, kObject, kManager, "StartTransientUnit");
  if (rc < 0) return BusError(rc, "sd_bus_message_new_method_call(StartTransientUnit)");
  Message message(raw);
  rc = sd_bus_message_append(message.get(), "ss", request.unit.c_str(), "fail");
  if (rc >= 0) rc = sd_bus_message_open_container(message.get(), 'a', "(sv)");
  if (rc >= 0)
    rc = sd_bus_message_append(message.get(), "(sv)", "Description", "s",
                               request.description.c_str());
  if (rc >= 0)
    rc = sd_bus_message_append(message.get(), "(sv)", "PIDs", "au", 1,
                               static_cast<uint32_t>(request.pid));
  if (rc >= 0) rc = sd_bus_message_append(message.get(), "(sv)", "Delegate", "b", 1);
  // A scope that failed is not kept around as a failed unit.
  if (rc >= 0)
    rc = sd_bus_message_append(message.get(), "(sv)", "CollectMode", "s", "inactive-or-failed");
  if (rc >= 0) rc = sd_bus_message_close_container(message.get());
  if (rc >= 0) rc = sd_bus_message_append(message.get(), "a(sa(sv))", 0);
  if (rc < 0) return BusError(rc, "building StartTransientUnit's arguments");
  return message;
}

}  // namespace

absl::Status StartDelegatedScope(const SystemdScopeRequest& request, absl::Duration timeout) {
  const SystemdManager manager = request.manager;
  const std::string& unit = request.unit;
  const absl::Time deadline = absl::Now() + timeout;
  ZYGO_ASSIGN_OR_RETURN(Connection connection, Connect(manager));
  sd_bus* bus = connection.bus.get();
  JobWait wait;
  // Watched before the job starts, so that its end cannot be missed. On a direct
  // connection messages carry no sender, so none is matched.
  sd_bus_slot* raw_slot = nullptr;
  int rc = sd_bus_match_signal(bus, &raw_slot, connection.direct ? nullptr : kService, kObject,
                               kManager, "JobRemoved", OnJobRemoved, &wait);
  if (rc < 0) return BusError(rc, "watching systemd's JobRemoved");
  Slot slot(raw_slot);
  // The manager sends job signals on the bus only to subscribers.
  rc = sd_bus_call_method(bus, kService, kObject, kManager, "Subscribe", nullptr, nullptr, "");
  if (rc < 0) return BusError(rc, "systemd Subscribe");

  ZYGO_ASSIGN_OR_RETURN(Message call, NewStartTransientUnit(bus, request));
  sd_bus_error error = SD_BUS_ERROR_NULL;
  sd_bus_message* raw_reply = nullptr;
  rc = sd_bus_call(bus, call.get(), absl::ToInt64Microseconds(timeout), &error, &raw_reply);
  Message reply(raw_reply);
  if (rc < 0) {
    absl::Status status = absl::UnavailableError(absl::StrCat(
        "systemd's ", SystemdManagerName(manager), " manager refused StartTransientUnit(", unit,
        ", Delegate=yes): ", error.message != nullptr ? error.message : strerror(-rc)));
    sd_bus_error_free(&error);
    return status;
  }
  const char* job = nullptr;
  rc = sd_bus_message_read(reply.get(), "o", &job);
  if (rc < 0) return BusError(rc, "reading StartTransientUnit's job");
  wait.job = job;

  while (wait.result.empty()) {
    rc = sd_bus_process(bus, nullptr);
    if (rc < 0) return BusError(rc, "sd_bus_process");
    if (rc > 0) continue;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("systemd did not finish starting ", unit,
                                                      " within ", absl::FormatDuration(timeout)));
    }
    rc = sd_bus_wait(bus, absl::ToInt64Microseconds(left));
    if (rc < 0) return BusError(rc, "sd_bus_wait");
  }
  if (wait.result != "done") {
    return absl::UnavailableError(
        absl::StrCat("systemd's job starting ", unit, " ended \"", wait.result, "\""));
  }
  return absl::OkStatus();
}

}  // namespace zygo::core::internal
