#pragma once
// LoopbackApiServer: an in-process HTTP server on 127.0.0.1 that answers the LIST and WATCH
// requests of volcache's reflectors, for `volcache bench watch` (the path `serve` runs: a
// Reflector reading a chunked HTTP stream into the cache). It serves pre-rendered JSON only,
// so its own cost stays small next to the client it measures on the same cores:
//   - GET <collection>?limit=N[&continue=K]: a List page of the collection's items (the
//     continue token is the offset of the next item), as the API server paginates;
//   - GET <collection>?watch=true...: a chunked stream. For a collection given watch lines,
//     the stream waits for ReleaseWatch(), then writes the lines in chunks of about
//     `chunk_bytes` and stays open (idle) until the server stops; other collections' watches
//     stay open and idle. A second watch of the same collection gets no lines again.
// Collections that were never set answer an empty List.
//
// Owns the cpp-httplib server (kept out of this header) and its thread pool.
// Thread-safety: Set* before Start(); the other methods are safe for concurrent use. The
// destructor stops the server (idle watches end).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/status.h"

namespace volcache::bench {

class LoopbackApiServer {
 public:
  explicit LoopbackApiServer(size_t chunk_bytes = 64 << 10);
  ~LoopbackApiServer();
  LoopbackApiServer(const LoopbackApiServer&) = delete;
  LoopbackApiServer& operator=(const LoopbackApiServer&) = delete;

  // `collection` is the request path, e.g. "/api/v1/pods"; `list_kind` e.g. "PodList";
  // items are JSON objects (shared: several servers may serve the same rendering).
  void SetList(const std::string& collection, const std::string& list_kind,
               std::shared_ptr<const std::vector<std::string>> items);
  // Watch lines (JSON events, without the newline) for `collection`.
  void SetWatch(const std::string& collection, std::shared_ptr<const std::vector<std::string>> lines);

  Status Start();
  std::string url() const;
  // Lets the waiting watch streams write their lines.
  void ReleaseWatch();
  uint64_t list_requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache::bench
