#include "kube/line_splitter.h"

#include <fmt/format.h>

namespace volcache::kube {

namespace {
std::string_view TrimCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}
}  // namespace

Status LineSplitter::Feed(std::string_view chunk, const LineFn& fn) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (buffer_.size() + chunk.size() > max_line_bytes_) {
        size_t size = buffer_.size() + chunk.size();
        buffer_.clear();
        return Status::ResourceExhausted(
            fmt::format("watch stream: line exceeds {} bytes (at least {} buffered)", max_line_bytes_, size));
      }
      buffer_.append(chunk);
      return Status::Ok();
    }
    std::string_view line;
    if (buffer_.empty()) {
      line = chunk.substr(0, nl);
    } else {
      buffer_.append(chunk.substr(0, nl));
      line = buffer_;
    }
    if (line.size() > max_line_bytes_) {
      size_t size = line.size();
      buffer_.clear();
      return Status::ResourceExhausted(
          fmt::format("watch stream: line of {} bytes exceeds {}", size, max_line_bytes_));
    }
    chunk.remove_prefix(nl + 1);
    line = TrimCr(line);
    Status s = line.empty() ? Status::Ok() : fn(line);
    buffer_.clear();  // after fn: `line` may point into it
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status LineSplitter::Finish() {
  if (TrimCr(buffer_).empty()) {
    buffer_.clear();
    return Status::Ok();
  }
  size_t n = buffer_.size();
  buffer_.clear();
  return Status::Unavailable(fmt::format("watch stream truncated: {} bytes after the last complete line", n));
}

}  // namespace volcache::kube
