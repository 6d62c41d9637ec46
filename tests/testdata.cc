#include "tests/testdata.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace volcache::testing {

const std::string& SharedDataDir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("VOLCACHE_DATA_DIR"); env && *env) return std::string(env);
    return (std::filesystem::path(VOLCACHE_SOURCE_DIR) / ".." / "shared" / "data")
        .lexically_normal()
        .string();
  }();
  if (!std::filesystem::is_directory(dir)) {
    std::fprintf(stderr, "shared test data not found at %s (set VOLCACHE_DATA_DIR)\n", dir.c_str());
    std::abort();
  }
  return dir;
}

std::string ExamplesDir() { return std::string(VOLCACHE_SOURCE_DIR) + "/examples"; }

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace volcache::testing
