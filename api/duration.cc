#include "api/duration.h"

#include <cmath>
#include <cstdlib>
#include <utility>

namespace volcache {

Result<std::chrono::nanoseconds> ParseDuration(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {{"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
  for (const auto& [unit, seconds] : kUnits) {
    const std::string u(unit);
    if (text.size() <= u.size() || text.compare(text.size() - u.size(), u.size(), u) != 0) continue;
    std::string num = text.substr(0, text.size() - u.size());
    // "5m" must not be read as "5" + "m" when it is "5ms".
    if (u == "m" && !num.empty() && num.back() == 'm') continue;
    char* end = nullptr;
    double v = std::strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) break;
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(v * seconds));
  }
  return Status::InvalidArgument("duration \"" + text + "\": want a non-negative number with ms, s, m or h");
}

}  // namespace volcache
