#pragma once
// Test helpers for /metrics text (exposition format 0.0.4): a parser that checks the format
// as it goes (what promtool's check metrics would refuse), and a sample lookup that does not
// depend on label order or series order. Header-only; used by the tests in tests/server/.

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace volcache::testing {

using ExpositionLabels = std::map<std::string, std::string>;

struct ExpositionSample {
  std::string name;  // as written: family, or family_bucket/_sum/_count
  ExpositionLabels labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> type;  // family -> counter|gauge|histogram|...
  std::map<std::string, std::string> help;  // family -> HELP text, unescaped
  std::vector<ExpositionSample> samples;
  std::vector<std::string> problems;  // empty when the text is valid

  std::optional<double> Value(const std::string& name, const ExpositionLabels& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return std::nullopt;
  }
};

namespace exposition_detail {

inline bool IsNameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

// Reads a name at `pos`; empty when there is none.
inline std::string ReadName(const std::string& s, size_t* pos, bool colon) {
  size_t start = *pos;
  while (*pos < s.size() && IsNameChar(s[*pos], *pos == start, colon)) ++*pos;
  return s.substr(start, *pos - start);
}

// Parses `{a="x",b="y"}` starting at the '{'; false on a syntax error.
inline bool ReadLabels(const std::string& s, size_t* pos, ExpositionLabels* out, std::string* why) {
  ++*pos;  // '{'
  while (*pos < s.size() && s[*pos] != '}') {
    const std::string name = ReadName(s, pos, /*colon=*/false);
    if (name.empty()) return *why = "bad label name", false;
    if (*pos + 1 >= s.size() || s[*pos] != '=' || s[*pos + 1] != '"') return *why = "expected =\"", false;
    *pos += 2;
    std::string value;
    for (;;) {
      if (*pos >= s.size()) return *why = "unterminated label value", false;
      const char c = s[(*pos)++];
      if (c == '"') break;
      if (c == '\\') {
        if (*pos >= s.size()) return *why = "dangling backslash", false;
        const char e = s[(*pos)++];
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return *why = "bad escape in label value", false;
        }
      } else if (c == '\n') {
        return *why = "newline in label value", false;
      } else {
        value += c;
      }
    }
    if (!out->emplace(name, value).second) return *why = "label repeated", false;
    if (*pos < s.size() && s[*pos] == ',') ++*pos;
  }
  if (*pos >= s.size()) return *why = "unterminated label set", false;
  ++*pos;  // '}'
  return true;
}

inline bool ParseValue(const std::string& v, double* out) {
  if (v == "+Inf" || v == "Inf") return *out = std::numeric_limits<double>::infinity(), true;
  if (v == "-Inf") return *out = -std::numeric_limits<double>::infinity(), true;
  if (v == "NaN" || v == "Nan" || v == "nan") return *out = std::nan(""), true;
  if (v.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return end == v.c_str() + v.size();
}

inline std::string Unescape(const std::string& help) {
  std::string out;
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] == '\\' && i + 1 < help.size()) {
      out += help[i + 1] == 'n' ? '\n' : help[i + 1];
      ++i;
    } else {
      out += help[i];
    }
  }
  return out;
}

}  // namespace exposition_detail

// Parses and checks: every line a HELP, TYPE or sample; a family's HELP and TYPE once, before
// its samples; samples belong to the family above them; no duplicate series; counters and
// histogram counts not negative; each histogram series has buckets that are cumulative in le
// order, a +Inf bucket equal to _count, and a _sum.
inline Exposition ParseExposition(const std::string& text) {
  using namespace exposition_detail;
  Exposition e;
  if (!text.empty() && text.back() != '\n') e.problems.push_back("does not end with a newline");
  std::set<std::string> series_seen;
  std::string family;
  struct Hist {
    std::map<double, double> buckets;  // le -> cumulative
    std::optional<double> sum, count;
  };
  std::map<std::string, Hist> hists;  // family + labels without le
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = "line " + std::to_string(n) + " '" + line + "': ";
    if (line.empty()) {
      e.problems.push_back(where + "empty line");
      continue;
    }
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      size_t pos = 7;
      const std::string name = ReadName(line, &pos, /*colon=*/true);
      if (name.empty() || pos >= line.size() || line[pos] != ' ') {
        e.problems.push_back(where + "bad HELP/TYPE line");
        continue;
      }
      const std::string rest = line.substr(pos + 1);
      if (line[2] == 'H') {
        if (e.help.count(name)) e.problems.push_back(where + "HELP repeated");
        e.help[name] = Unescape(rest);
        family = name;
      } else {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kTypes.count(rest)) e.problems.push_back(where + "unknown type");
        if (e.type.count(name)) e.problems.push_back(where + "TYPE repeated");
        if (name != family) e.problems.push_back(where + "TYPE for another family than its HELP");
        e.type[name] = rest;
        family = name;
      }
      continue;
    }
    if (line[0] == '#') continue;  // a comment
    ExpositionSample s;
    size_t pos = 0;
    s.name = ReadName(line, &pos, /*colon=*/true);
    std::string why;
    if (s.name.empty()) {
      e.problems.push_back(where + "not a HELP, TYPE or sample line");
      continue;
    }
    if (pos < line.size() && line[pos] == '{' && !ReadLabels(line, &pos, &s.labels, &why)) {
      e.problems.push_back(where + why);
      continue;
    }
    if (pos >= line.size() || line[pos] != ' ' || !ParseValue(line.substr(pos + 1), &s.value)) {
      e.problems.push_back(where + "bad value");
      continue;
    }
    const std::string type = e.type.count(family) ? e.type[family] : "";
    if (type.empty()) e.problems.push_back(where + "sample before TYPE");
    const bool histogram = type == "histogram";
    const bool belongs =
        histogram ? (s.name == family + "_bucket" || s.name == family + "_sum" || s.name == family + "_count")
                  : s.name == family;
    if (!belongs) e.problems.push_back(where + "sample does not belong to family " + family);
    std::string key = s.name + "{";
    for (const auto& [k, v] : s.labels) key += k + "=" + v + ",";
    if (!series_seen.insert(key + "}").second) e.problems.push_back(where + "duplicate series");
    if ((type == "counter" || s.name.ends_with("_count") || s.name.ends_with("_bucket")) && s.value < 0)
      e.problems.push_back(where + "negative counter");
    if (histogram) {
      ExpositionLabels rest = s.labels;
      rest.erase("le");
      std::string hkey = family + "{";
      for (const auto& [k, v] : rest) hkey += k + "=" + v + ",";
      Hist& h = hists[hkey + "}"];
      if (s.name == family + "_bucket") {
        double le = 0;
        if (!s.labels.count("le") || !ParseValue(s.labels.at("le"), &le)) {
          e.problems.push_back(where + "bucket without a numeric le");
        } else {
          h.buckets[le] = s.value;
        }
      } else if (s.labels.count("le")) {
        e.problems.push_back(where + "le on a non-bucket sample");
      } else if (s.name == family + "_sum") {
        h.sum = s.value;
      } else {
        h.count = s.value;
      }
    }
    e.samples.push_back(std::move(s));
  }
  for (const auto& [key, h] : hists) {
    double last = 0;
    for (const auto& [le, v] : h.buckets) {
      if (v < last) e.problems.push_back(key + ": buckets not cumulative at le=" + std::to_string(le));
      last = v;
    }
    if (h.buckets.empty() || !std::isinf(h.buckets.rbegin()->first)) {
      e.problems.push_back(key + ": no +Inf bucket");
    } else if (!h.count || *h.count != h.buckets.rbegin()->second) {
      e.problems.push_back(key + ": _count missing or not equal to the +Inf bucket");
    }
    if (!h.sum) e.problems.push_back(key + ": no _sum");
  }
  return e;
}

inline std::vector<std::string> CheckExposition(const std::string& text) {
  return ParseExposition(text).problems;
}

// The value of one series, given as it would be written (`name{a="x",b="y"}` or `name`),
// whatever the order of labels and series in `text`; nullopt when absent.
inline std::optional<double> Sample(const std::string& text, const std::string& series) {
  using namespace exposition_detail;
  size_t pos = 0;
  const std::string name = ReadName(series, &pos, /*colon=*/true);
  ExpositionLabels labels;
  std::string why;
  if (pos < series.size() && series[pos] == '{' && !ReadLabels(series, &pos, &labels, &why))
    return std::nullopt;
  return ParseExposition(text).Value(name, labels);
}

}  // namespace volcache::testing
