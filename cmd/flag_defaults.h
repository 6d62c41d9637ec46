#pragma once
// Flag defaults taken from the option structs (one source of truth): a flag that is parsed
// as text (a duration such as --schedule-period) starts as its struct default written back
// the way a user would type it, so `--help` shows what the struct says.
// Thread-safety: pure functions.

#include <chrono>
#include <string>

namespace volcache::cmd {

// "1s", "15s", "20ms", "0s": whole seconds as seconds, else milliseconds (ParseDuration's
// units; a sub-millisecond default would print as a fraction of a millisecond).
inline std::string DurationFlagDefault(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  if (d % seconds(1) == nanoseconds::zero()) return std::to_string(duration_cast<seconds>(d).count()) + "s";
  if (d % milliseconds(1) == nanoseconds::zero()) {
    return std::to_string(duration_cast<milliseconds>(d).count()) + "ms";
  }
  return std::to_string(duration<double, std::milli>(d).count()) + "ms";
}

}  // namespace volcache::cmd
