#include "api/check.h"

#include <cstdio>
#include <cstdlib>

namespace volcache::internal {

void CheckFailed(const char* file, int line, const char* expr, std::string_view msg) {
  std::fprintf(stderr, "FATAL %s:%d: check failed: %s: %.*s\n", file, line, expr,
               static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace volcache::internal
