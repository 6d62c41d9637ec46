#pragma once
// SignalDump: runs a callback on a watcher thread each time the process receives a signal
// (SIGUSR2 by default) — the daemon's "dump the cache to the log" (SPEC §3 Debugging).
//
// The signal handler only writes one byte to a non-blocking self-pipe (async-signal-safe:
// an atomic load and write(2), errno preserved); the watcher thread reads the pipe and calls
// the callback, so the callback may lock, allocate and log. Signals that arrive while a
// callback runs are coalesced into one more call.
//
// Owns: the pipe, the watcher thread, the installed handler (the previous disposition is
// restored by Stop()). At most one SignalDump may be started per process at a time (the
// handler reaches the pipe through one global).
// Thread-safety: Start/Stop from one thread (the daemon's main thread); the callback runs on
// the watcher thread and must not call Stop().

#include <csignal>
#include <functional>
#include <memory>

#include "api/status.h"

namespace volcache {

class CacheRuntime;

class SignalDump {
 public:
  explicit SignalDump(std::function<void()> callback, int signo = SIGUSR2);
  ~SignalDump();  // Stop()
  SignalDump(const SignalDump&) = delete;
  SignalDump& operator=(const SignalDump&) = delete;

  // Creates the pipe, starts the watcher and installs the handler. FailedPrecondition when
  // another SignalDump is active, Internal when a system call fails.
  Status Start();
  // Restores the previous handler and joins the watcher. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The daemon's SIGUSR2 callback: logs the cache dump (SPEC §8 JSON) and the comparison
// against the cluster source at info level. `runtime` must outlive the callback's use.
std::function<void()> LogCacheDumpCallback(CacheRuntime* runtime);

}  // namespace volcache
