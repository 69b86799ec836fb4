// Return/assign macros for absl::Status, since Debian's Abseil 20220623 lacks them.
#ifndef ZYGO_CORE_BASE_STATUS_MACROS_H_
#define ZYGO_CORE_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ZYGO_CONCAT_INNER_(a, b) a##b
#define ZYGO_CONCAT_(a, b) ZYGO_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define ZYGO_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status zygo_status_ = (expr);        \
    if (!zygo_status_.ok()) return zygo_status_; \
  } while (0)

// `ZYGO_ASSIGN_OR_RETURN(auto x, F())` assigns the value or returns the error.
#define ZYGO_ASSIGN_OR_RETURN(lhs, expr) \
  ZYGO_ASSIGN_OR_RETURN_IMPL_(ZYGO_CONCAT_(zygo_statusor_, __LINE__), lhs, expr)

#define ZYGO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // ZYGO_CORE_BASE_STATUS_MACROS_H_
