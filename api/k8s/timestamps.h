#pragma once
// RFC 3339 timestamps. Thread-safety: stateless; safe for concurrent use.

#include <string_view>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::k8s {

// RFC 3339 timestamp ("2019-12-31T19:27:22Z", fractional seconds and offsets allowed).
Result<TimeMs> ParseTimestamp(std::string_view text);

}  // namespace volcache::k8s
