#pragma once
// Runs tests/server/parse_metrics.py — python3-prometheus-client's exposition-format parser
// plus structural checks — on a /metrics body. Header-only; needs VOLCACHE_PYTHON3 (Debian's
// interpreter, which has the package) and VOLCACHE_SOURCE_DIR defined (tests/CMakeLists.txt).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace volcache::testing {

// What tests/server/parse_metrics.py (python3-prometheus-client's exposition parser) says
// about `body`: its exit status (0: valid, every `expect` FAMILY:TYPE present) and stdout
// (JSON: family -> type, help, samples).
struct ParsedMetrics {
  int status = -1;
  nlohmann::json families;
};

inline ParsedMetrics ParseWithPrometheusClient(const std::string& body,
                                               const std::vector<std::string>& expect = {}) {
  static std::atomic<int> n{0};
  const std::string path = ::testing::TempDir() + "/volcache_metrics_" + std::to_string(::getpid()) + "_" +
                           std::to_string(n.fetch_add(1)) + ".txt";
  {
    std::ofstream f(path, std::ios::binary);
    f << body;
  }
  std::string cmd =
      std::string(VOLCACHE_PYTHON3) + " " + VOLCACHE_SOURCE_DIR "/tests/server/parse_metrics.py " + path;
  for (const auto& e : expect) cmd += " " + e;
  ParsedMetrics out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::string text;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, got);
  const int rc = ::pclose(p);
  std::remove(path.c_str());
  out.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (out.status == 0) out.families = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return out;
}

// The value of one sample in ParseWithPrometheusClient's JSON; NaN when absent.
inline double ParsedValue(const nlohmann::json& families, const std::string& family,
                          const std::string& sample,
                          const nlohmann::json& labels = nlohmann::json::object()) {
  if (!families.contains(family)) return std::nan("");
  for (const auto& s : families[family]["samples"]) {
    if (s[0] == sample && s[1] == labels && s[2].is_number()) return s[2].get<double>();
  }
  return std::nan("");
}

}  // namespace volcache::testing
