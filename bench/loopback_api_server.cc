#include "bench/loopback_api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "api/mutex.h"

namespace volcache::bench {

namespace {

struct Collection {
  std::string list_kind;
  std::shared_ptr<const std::vector<std::string>> items;
  std::shared_ptr<const std::vector<std::string>> watch_lines;
  bool watch_served = false;  // the lines go to the first watch only
};

}  // namespace

struct LoopbackApiServer::Impl {
  explicit Impl(size_t chunk) : chunk_bytes(chunk) {}
  const size_t chunk_bytes;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  int listen_fd = -1;

  mutable Mutex mu;
  CondVar cv;  // released or stopping
  std::unordered_map<std::string, Collection> collections GUARDED_BY(mu);
  bool released GUARDED_BY(mu) = false;
  bool stopping GUARDED_BY(mu) = false;
  uint64_t lists GUARDED_BY(mu) = 0;

  void List(const std::string& path, const httplib::Request& req, httplib::Response& res) EXCLUDES(mu) {
    std::string kind = "List";
    std::shared_ptr<const std::vector<std::string>> items;
    {
      MutexLock lock(&mu);
      ++lists;
      auto it = collections.find(path);
      if (it != collections.end()) {
        kind = it->second.list_kind;
        items = it->second.items;
      }
    }
    const size_t n = items ? items->size() : 0;
    size_t limit = n;
    if (req.has_param("limit")) limit = std::max<size_t>(1, std::stoull(req.get_param_value("limit")));
    size_t from = 0;
    if (req.has_param("continue"))
      from = std::min(n, static_cast<size_t>(std::stoull(req.get_param_value("continue"))));
    const size_t to = std::min(n, from + limit);
    size_t bytes = 128;
    for (size_t i = from; i < to; ++i) bytes += (*items)[i].size() + 1;
    std::string body;
    body.reserve(bytes);
    body += R"({"kind":")" + kind + R"(","apiVersion":"v1","metadata":{"resourceVersion":"1000")";
    if (to < n) body += R"(,"continue":")" + std::to_string(to) + "\"";
    body += R"(},"items":[)";
    for (size_t i = from; i < to; ++i) {
      if (i > from) body += ',';
      body += (*items)[i];
    }
    body += "]}";
    res.status = 200;
    res.set_content(std::move(body), "application/json");
  }

  void Watch(const std::string& path, httplib::Response& res) EXCLUDES(mu) {
    std::shared_ptr<const std::vector<std::string>> lines;
    {
      MutexLock lock(&mu);
      auto it = collections.find(path);
      if (it != collections.end() && !it->second.watch_served) {
        lines = it->second.watch_lines;
        it->second.watch_served = lines != nullptr;
      }
    }
    auto next = std::make_shared<size_t>(0);
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json", [this, lines, next](size_t, httplib::DataSink& sink) {
          if (lines && *next < lines->size()) {  // `lines` and `next` are this stream's own
            {
              MutexLock lock(&mu);
              while (!released && !stopping) cv.Wait(&mu);
              if (stopping) {
                sink.done();
                return true;
              }
            }
            std::string chunk;
            chunk.reserve(chunk_bytes + 8192);
            while (*next < lines->size() && chunk.size() < chunk_bytes) {
              chunk += (*lines)[*next];
              chunk += '\n';
              ++*next;
            }
            return sink.write(chunk.data(), chunk.size());
          }
          // Idle until the server stops, as a quiet watch does.
          MutexLock lock(&mu);
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
          while (!stopping && cv.WaitUntil(&mu, deadline)) {
          }
          if (stopping) sink.done();
          return true;
        });
  }
};

LoopbackApiServer::LoopbackApiServer(size_t chunk_bytes) : impl_(std::make_unique<Impl>(chunk_bytes)) {
  httplib::Server& srv = impl_->server;
  srv.new_task_queue = [] { return new httplib::ThreadPool(32); };
  srv.set_keep_alive_max_count(1u << 30);
  srv.set_tcp_nodelay(true);
  Impl* impl = impl_.get();
  srv.set_socket_options([impl](socket_t sock) {
    httplib::default_socket_options(sock);
    if (impl->listen_fd < 0) impl->listen_fd = sock;
  });
  srv.Get(R"(/.*)", [impl](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("watch") && req.get_param_value("watch") == "true") return impl->Watch(req.path, res);
    impl->List(req.path, req, res);
  });
}

LoopbackApiServer::~LoopbackApiServer() {
  {
    MutexLock lock(&impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.SignalAll();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void LoopbackApiServer::SetList(const std::string& collection, const std::string& list_kind,
                                std::shared_ptr<const std::vector<std::string>> items) {
  MutexLock lock(&impl_->mu);
  Collection& c = impl_->collections[collection];
  c.list_kind = list_kind;
  c.items = std::move(items);
}

void LoopbackApiServer::SetWatch(const std::string& collection,
                                 std::shared_ptr<const std::vector<std::string>> lines) {
  MutexLock lock(&impl_->mu);
  impl_->collections[collection].watch_lines = std::move(lines);
}

Status LoopbackApiServer::Start() {
  impl_->port = impl_->server.bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0) return Status::Unavailable("loopback API server: no port on 127.0.0.1");
  if (impl_->listen_fd >= 0 && ::listen(impl_->listen_fd, SOMAXCONN) != 0) {
    return Status::Unavailable("loopback API server: listen: backlog not raised");
  }
  impl_->thread = std::thread([impl = impl_.get()] { impl->server.listen_after_bind(); });
  return Status::Ok();
}

std::string LoopbackApiServer::url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }

void LoopbackApiServer::ReleaseWatch() {
  {
    MutexLock lock(&impl_->mu);
    impl_->released = true;
  }
  impl_->cv.SignalAll();
}

uint64_t LoopbackApiServer::list_requests() const {
  MutexLock lock(&impl_->mu);
  return impl_->lists;
}

}  // namespace volcache::bench
