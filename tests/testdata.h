#pragma once
// Locating test inputs: the shared third-party data set (../shared/data relative to the
// repository, or $VOLCACHE_DATA_DIR) and the repository's own examples/.

#include <string>

namespace volcache::testing {

// Directory of the shared data set; aborts the test binary with a clear message if absent.
const std::string& SharedDataDir();
// <repo>/examples
std::string ExamplesDir();
// Reads a whole file; aborts with a message naming the path if it cannot.
std::string ReadFileOrDie(const std::string& path);

}  // namespace volcache::testing
