// Fuzzes the watch stream path: arbitrary bytes cut into arbitrary chunks → LineSplitter →
// DecodeWatchEvent per line. Must never crash, hang or leak; errors are values.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/k8s/decode.h"
#include "kube/line_splitter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size, so chunk boundaries land everywhere.
  const size_t chunk = 1 + data[0] % 64;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  volcache::kube::LineSplitter splitter(1 << 16);
  auto on_line = [](std::string_view line) {
    auto ev = volcache::k8s::DecodeWatchEvent(line);
    (void)ev;
    return volcache::Status::Ok();
  };
  while (!rest.empty()) {
    const size_t n = rest.size() < chunk ? rest.size() : chunk;
    if (!splitter.Feed(rest.substr(0, n), on_line).ok()) splitter.Reset();
    rest.remove_prefix(n);
  }
  (void)splitter.Finish();
  return 0;
}
