#include "server/signal_dump.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "cache/runtime.h"

namespace volcache {

namespace {

// The write end of the active SignalDump's pipe, -1 when none. Lock-free, so reading it in
// the handler is async-signal-safe.
std::atomic<int> g_signal_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void SignalDumpHandler(int) {
  const int saved_errno = errno;
  const int fd = g_signal_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const char c = 's';
    // Non-blocking: a full pipe already holds a wake-up, so dropping this byte is fine.
    [[maybe_unused]] ssize_t n = ::write(fd, &c, 1);
  }
  errno = saved_errno;
}

}  // namespace

struct SignalDump::Impl {
  std::function<void()> callback;
  int signo;
  int read_fd = -1, write_fd = -1;
  bool started = false;
  std::atomic<bool> stopping{false};
  struct sigaction previous {};
  std::thread watcher;

  void Watch() {
    char buf[64];
    while (true) {
      const ssize_t n = ::read(read_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || stopping.load()) return;
      callback();  // one call for every byte read together: signals coalesce
    }
  }

  void CloseFds() {
    if (read_fd >= 0) ::close(read_fd);
    if (write_fd >= 0) ::close(write_fd);
    read_fd = write_fd = -1;
  }
};

SignalDump::SignalDump(std::function<void()> callback, int signo) : impl_(std::make_unique<Impl>()) {
  impl_->callback = std::move(callback);
  impl_->signo = signo;
}

SignalDump::~SignalDump() { Stop(); }

Status SignalDump::Start() {
  if (impl_->started) return Status::FailedPrecondition("signal dump already started");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::Internal(std::string("signal dump: pipe: ") + std::strerror(errno));
  impl_->read_fd = fds[0];
  impl_->write_fd = fds[1];
  if (::fcntl(impl_->write_fd, F_SETFL, O_NONBLOCK) != 0) {
    impl_->CloseFds();
    return Status::Internal(std::string("signal dump: fcntl: ") + std::strerror(errno));
  }
  int expected = -1;
  if (!g_signal_fd.compare_exchange_strong(expected, impl_->write_fd)) {
    impl_->CloseFds();
    return Status::FailedPrecondition("another signal dump is already active in this process");
  }
  impl_->watcher = std::thread([impl = impl_.get()] { impl->Watch(); });
  struct sigaction sa {};
  sa.sa_handler = SignalDumpHandler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(impl_->signo, &sa, &impl_->previous) != 0) {
    const Status s = Status::Internal(std::string("signal dump: sigaction: ") + std::strerror(errno));
    impl_->started = true;
    Stop();
    return s;
  }
  impl_->started = true;
  return Status::Ok();
}

void SignalDump::Stop() {
  if (!impl_->started) return;
  impl_->started = false;
  ::sigaction(impl_->signo, &impl_->previous, nullptr);
  impl_->stopping.store(true);
  const char c = 'q';
  // If the pipe is full the watcher has bytes to read and sees `stopping` after them.
  [[maybe_unused]] ssize_t n = ::write(impl_->write_fd, &c, 1);
  impl_->watcher.join();
  g_signal_fd.store(-1);
  impl_->CloseFds();
  impl_->stopping.store(false);
}

std::function<void()> LogCacheDumpCallback(CacheRuntime* runtime) {
  return [runtime] {
    // Asked for explicitly: logged at warning level so that it shows at the default verbosity.
    spdlog::warn("cache dump (SIGUSR2): {}", runtime->cache().Dump());
    const std::string report = runtime->cache().Compare();
    spdlog::warn("cache vs cluster (SIGUSR2): {}", report.empty() ? "consistent" : report);
  };
}

}  // namespace volcache
