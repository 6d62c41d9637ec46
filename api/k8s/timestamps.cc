// RFC 3339 timestamps (metadata.creationTimestamp and the like) to milliseconds since the epoch.

#include "api/k8s/timestamps.h"

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace volcache::k8s {

namespace {

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

Result<TimeMs> ParseTimestamp(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("invalid timestamp \"{}\": {} (want RFC 3339, e.g. 2006-01-02T15:04:05Z)",
                    text.size() <= 64 ? text : text.substr(0, 64), why));
  };
  size_t pos = 0;
  auto digits = [&](size_t n, int* out) {
    if (pos + n > text.size()) return false;
    int v = 0;
    for (size_t i = 0; i < n; ++i) {
      const char ch = text[pos + i];
      if (ch < '0' || ch > '9') return false;
      v = v * 10 + (ch - '0');
    }
    pos += n;
    *out = v;
    return true;
  };
  auto expect = [&](std::string_view chars) {
    if (pos < text.size() && chars.find(text[pos]) != std::string_view::npos) {
      ++pos;
      return true;
    }
    return false;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(4, &year) || !expect("-") || !digits(2, &month) || !expect("-") || !digits(2, &day)) {
    return bad("malformed date");
  }
  if (!expect("Tt")) return bad("expected 'T' after the date");
  if (!digits(2, &hour) || !expect(":") || !digits(2, &minute) || !expect(":") || !digits(2, &second)) {
    return bad("malformed time of day");
  }
  static constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return bad("month out of range");
  const int mdays = kDaysInMonth[month - 1] + (month == 2 && IsLeap(year) ? 1 : 0);
  if (day < 1 || day > mdays) return bad("day out of range");
  if (hour > 23 || minute > 59 || second > 59) return bad("time of day out of range");
  int64_t millis = 0;
  if (expect(".")) {
    const size_t start = pos;
    int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;  // digits beyond milliseconds are truncated
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad("expected digits after '.'");
  }
  int offset_minutes = 0;
  if (expect("Zz")) {
    // UTC
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const bool negative = text[pos] == '-';
    ++pos;
    int oh = 0, om = 0;
    if (!digits(2, &oh) || !expect(":") || !digits(2, &om)) return bad("malformed UTC offset");
    if (oh > 23 || om > 59) return bad("UTC offset out of range");
    offset_minutes = (oh * 60 + om) * (negative ? -1 : 1);
  } else {
    return bad("missing time zone ('Z' or an offset such as +02:00)");
  }
  if (pos != text.size()) return bad("trailing characters");
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - int64_t{offset_minutes} * 60;
  return seconds * 1000 + millis;
}

}  // namespace volcache::k8s
