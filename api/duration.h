#pragma once
// Durations as people write them on command lines, in config files and in annotations:
// "90s", "5m", "1h", "1500ms", "2.5s".
//
// Thread-safety: stateless; safe for concurrent use.

#include <chrono>
#include <string>

#include "api/status.h"

namespace volcache {

// A non-negative number with the unit ms, s, m or h → nanoseconds (the Duration of
// workers/clock.h). InvalidArgument naming the text otherwise.
Result<std::chrono::nanoseconds> ParseDuration(const std::string& text);

}  // namespace volcache
