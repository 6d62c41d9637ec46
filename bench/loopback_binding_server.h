#pragma once
// LoopbackBindingServer: an in-process HTTP server on 127.0.0.1 for `volcache bench bind`
// (mode rest_loopback). It answers POST /api/v1/namespaces/{ns}/pods/{name}/binding with 201
// and a Status Success body, and records every binding it accepted: pod "ns/name" → the
// target node and how many times it was bound. The body must be a JSON Binding whose
// metadata names the pod of the path and whose target names a node; anything else is
// answered 400 (or 404 for other paths) and counted as a bad request. It does no
// bookkeeping beyond that (no 409 on a second binding): the bench checks the counts.
//
// Owns the cpp-httplib server (kept out of this header) and its thread pool: one thread per
// keep-alive connection, so `threads` must exceed the connections the client opens.
// Thread-safety: every method is safe for concurrent use. The destructor stops the server.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "api/status.h"

namespace volcache::bench {

class LoopbackBindingServer {
 public:
  explicit LoopbackBindingServer(int threads = 64);
  ~LoopbackBindingServer();
  LoopbackBindingServer(const LoopbackBindingServer&) = delete;
  LoopbackBindingServer& operator=(const LoopbackBindingServer&) = delete;

  // Binds an ephemeral port on 127.0.0.1 and starts serving. Unavailable when no port.
  Status Start();
  // "http://127.0.0.1:<port>" once started.
  std::string url() const;

  struct Binding {
    std::string node;  // the last target received
    int count = 0;     // bindings received for the pod
  };
  // The bindings received since the previous call (pod "ns/name" → binding), then forgets them.
  std::unordered_map<std::string, Binding> TakeBindings();
  uint64_t bad_requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volcache::bench
