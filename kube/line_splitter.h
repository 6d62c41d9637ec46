#pragma once
// LineSplitter: turns the chunks of a streaming HTTP body (a watch stream) into complete
// newline-terminated lines. Chunks are not lines: a chunk may hold several lines, part of
// one, or end in the middle of a UTF-8 sequence; the splitter buffers the tail until its
// newline arrives.
//
// Errors: a line longer than `max_line_bytes` is refused (ResourceExhausted) and the
// splitter must be Reset(); Finish() reports a partial last line (a truncated stream) as
// DataLoss-like Unavailable naming its size. Empty lines (and "\r\n" endings) are skipped.
// Thread-safety: not thread-safe; one splitter per stream.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "api/status.h"

namespace volcache::kube {

class LineSplitter {
 public:
  using LineFn = std::function<Status(std::string_view line)>;
  explicit LineSplitter(size_t max_line_bytes = 64u << 20) : max_line_bytes_(max_line_bytes) {}

  // Calls `fn` for every complete line in buffered + `chunk`, in order. Stops at the first
  // error `fn` returns (the rest of the chunk is dropped) and returns it.
  Status Feed(std::string_view chunk, const LineFn& fn);
  // End of stream: OK if nothing is buffered, else Unavailable ("truncated ...").
  Status Finish();
  void Reset() { buffer_.clear(); }
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_line_bytes_;
  std::string buffer_;
};

}  // namespace volcache::kube
