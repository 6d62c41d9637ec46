#pragma once
// VC_CHECK: the one way volcache stops on an impossible state (a broken invariant, not bad
// input). Bad input and refused operations return a Status instead.

#include <string_view>

namespace volcache::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, std::string_view msg);
}  // namespace volcache::internal

#define VC_CHECK(cond, msg)                                                           \
  do {                                                                                \
    if (!(cond)) ::volcache::internal::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
