#include "server/admin_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/cluster_info.h"
#include "api/mutex.h"
#include "cache/runtime.h"
#include "server/metrics.h"

namespace volcache {

namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kText = "text/plain; charset=utf-8";

void JsonError(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}}.dump() + "\n", kJson);
}

// Compares without an early exit, so the time taken does not reveal how much matched.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::string DefaultMessage(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 413:
      return "request body too large";
    case 414:
      return "request URI too long";
    case 416:
      return "range not satisfiable";
    default:
      return status >= 500 ? "internal error" : "request failed";
  }
}

}  // namespace

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address '" + listen + "': " + why +
                                   " (want host:port or [v6]:port)");
  };
  size_t colon;
  if (!listen.empty() && listen[0] == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return bad("unterminated IPv6 address or missing port");
    }
    *host = listen.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    *host = listen.substr(0, colon);
    if (host->find(':') != std::string::npos) return bad("IPv6 addresses need brackets");
  }
  if (host->empty()) return bad("missing host");
  const std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
    return bad("bad port");
  *port = std::stoi(p);
  if (*port > 65535) return bad("port out of range");
  return Status::Ok();
}

struct AdminServer::Impl {
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  AdminOptions options;
  CacheRuntime* runtime;
  metrics::Registry* registry;
  std::function<bool()> ready;
  std::function<std::string()> not_ready_reason;  // when set, replaces `ready`
  std::function<std::string()> not_live_reason;   // /healthz: "" alive
  std::function<std::string()> shard_json;        // /debug/shard

  httplib::Server server;
  std::map<std::string, Handler> routes;  // GET (and HEAD) endpoints; fixed after construction

  // Serializes Start/Stop (held across binding the port and joining the listener thread, so
  // no request handler may take it).
  Mutex mu;
  std::thread thread GUARDED_BY(mu);
  bool started GUARDED_BY(mu) = false;
  bool stopped GUARDED_BY(mu) = false;
  std::string host GUARDED_BY(mu);
  std::atomic<int> port{0};
  std::atomic<bool> listen_returned{false};

  static bool IsProbe(const std::string& path) { return path == "/healthz" || path == "/readyz"; }

  bool NeedsCache(httplib::Response& res) const {
    if (runtime != nullptr) return true;
    JsonError(res, 503, "no cache attached to this server");
    return false;
  }

  void Setup();
};

void AdminServer::Impl::Setup() {
  routes["/healthz"] = [this](const httplib::Request&, httplib::Response& res) {
    const std::string reason = not_live_reason ? not_live_reason() : std::string();
    res.status = reason.empty() ? 200 : 503;
    res.set_content((reason.empty() ? std::string("ok") : reason) + "\n", kText);
  };
  routes["/readyz"] = [this](const httplib::Request&, httplib::Response& res) {
    if (not_ready_reason) {
      const std::string reason = not_ready_reason();
      res.status = reason.empty() ? 200 : 503;
      res.set_content((reason.empty() ? std::string("ok") : reason) + "\n", kText);
      return;
    }
    if (ready()) {
      res.set_content("ok\n", kText);
    } else {
      JsonError(res, 503, "not ready: the cache has not synced yet");
    }
  };
  routes["/metrics"] = [this](const httplib::Request&, httplib::Response& res) {
    if (registry == nullptr) {
      JsonError(res, 503, "no metrics registry attached to this server");
      return;
    }
    res.set_content(registry->Serialize(), std::string(metrics::kExpositionContentType).c_str());
  };
  routes["/debug/cache"] = [this](const httplib::Request&, httplib::Response& res) {
    if (NeedsCache(res)) res.set_content(runtime->cache().Dump(), kJson);
  };
  routes["/debug/snapshot"] = [this](const httplib::Request& req, httplib::Response& res) {
    if (!NeedsCache(res)) return;
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<ClusterInfo> snapshot = runtime->cache().Snapshot();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    size_t tasks = 0;
    for (const auto& [_, job] : snapshot->jobs()) tasks += job->tasks().size();
    nlohmann::ordered_json summary = {{"snapshotSeconds", seconds},
                                      {"nodes", snapshot->nodes().size()},
                                      {"jobs", snapshot->jobs().size()},
                                      {"tasks", tasks},
                                      {"queues", snapshot->queues.size()}};
    std::string body = summary.dump();
    if (!req.has_param("summary")) {
      // Splice the snapshot's own JSON in rather than parsing it back.
      body.pop_back();
      body += ",\"snapshot\":";
      body += DumpClusterInfo(*snapshot);
      body += '}';
    }
    body += '\n';
    res.set_content(body, kJson);
  };
  routes["/debug/shard"] = [this](const httplib::Request&, httplib::Response& res) {
    if (!shard_json) {
      JsonError(res, 503, "no shard information attached to this server");
      return;
    }
    res.set_content(shard_json() + "\n", kJson);
  };
  routes["/debug/compare"] = [this](const httplib::Request&, httplib::Response& res) {
    if (!NeedsCache(res)) return;
    const std::string report = runtime->cache().Compare();
    const Status invariants = runtime->cache().CheckInvariants();
    nlohmann::ordered_json j = {{"consistent", report.empty()},
                                {"report", report},
                                {"invariants", invariants.ok() ? "ok" : invariants.message()}};
    res.set_content(j.dump() + "\n", kJson);
  };

  // Authentication and routing happen here, before httplib reads a body: an unauthenticated
  // client cannot make the server read anything.
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!options.bearer_token.empty() && !IsProbe(req.path)) {
      const std::string auth = req.get_header_value("Authorization");
      if (!ConstantTimeEquals(auth, "Bearer " + options.bearer_token)) {
        res.set_header("WWW-Authenticate", "Bearer");
        JsonError(res, 401, auth.empty() ? "missing bearer token" : "invalid bearer token");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    // httplib reads (and size-checks) bodies only for POST, PUT, PATCH and DELETE; refuse
    // the rest here from the headers alone, without reading the body.
    if (req.has_header("Content-Length")) {
      const std::string len = req.get_header_value("Content-Length");
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(len.c_str(), &end, 10);
      if (len.empty() || *end != '\0' || errno == ERANGE || n > options.max_body_bytes) {
        res.set_header("Connection", "close");
        JsonError(res, 413,
                  "request body too large (limit " + std::to_string(options.max_body_bytes) + " bytes)");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (n > 0 && (req.method == "GET" || req.method == "HEAD")) {
        res.set_header("Connection", "close");
        JsonError(res, 400, req.method + " requests take no body");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib has read (and size-checked: 413) any body by the time these run.
  auto get = [this](const httplib::Request& req, httplib::Response& res) {
    auto it = routes.find(req.path);
    if (it == routes.end()) {
      JsonError(res, 404, "no such endpoint: " + req.path);
      return;
    }
    it->second(req, res);
  };
  auto other = [this](const httplib::Request& req, httplib::Response& res) {
    if (routes.count(req.path) == 0) {
      JsonError(res, 404, "no such endpoint: " + req.path);
      return;
    }
    res.set_header("Allow", "GET, HEAD");
    JsonError(res, 405, req.method + " is not allowed on " + req.path + " (GET, HEAD)");
  };
  server.Get(".*", get);
  server.Post(".*", other);
  server.Put(".*", other);
  server.Patch(".*", other);
  server.Delete(".*", other);
  server.Options(".*", other);
  // Errors httplib produces itself (malformed request 400, 413, 414, unknown method) get the
  // same JSON shape; responses our handlers wrote already have a body and pass through.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        JsonError(res, res.status, DefaultMessage(res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("admin: {} {} failed: {}", req.method, req.path, what);
        JsonError(res, 500, "internal error: " + what);
      });
  server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("admin: {} {} -> {}", req.method, req.path, res.status);
  });
  server.set_payload_max_length(options.max_body_bytes);
  // httplib's default also sets SO_REUSEPORT, which would let a second daemon bind the same
  // port and silently share it; keep only SO_REUSEADDR (restart without TIME_WAIT trouble).
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);
  // Bounds how long Stop() waits for an idle keep-alive connection.
  server.set_keep_alive_timeout(1);
  const size_t threads = static_cast<size_t>(std::max(1, options.threads));
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
}

AdminServer::AdminServer(AdminOptions options, CacheRuntime* runtime, metrics::Registry* registry,
                         std::function<bool()> ready)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->runtime = runtime;
  impl_->registry = registry;
  if (ready) {
    impl_->ready = std::move(ready);
  } else {
    impl_->ready = [runtime] { return runtime != nullptr && runtime->synced(); };
  }
  impl_->Setup();
}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::SetReadiness(std::function<std::string()> reason) {
  impl_->not_ready_reason = std::move(reason);
}

void AdminServer::SetLiveness(std::function<std::string()> reason) {
  impl_->not_live_reason = std::move(reason);
}

void AdminServer::SetShard(std::function<std::string()> json) { impl_->shard_json = std::move(json); }

std::string ReadinessReason(bool synced, double seconds_since_contact, double max_stale_seconds) {
  if (!synced) return "syncing";
  if (max_stale_seconds > 0 && seconds_since_contact > max_stale_seconds) {
    return "stale: no successful watch or list for " +
           std::to_string(static_cast<int64_t>(seconds_since_contact)) + " s";
  }
  return "";
}

Status AdminServer::Start() {
  MutexLock lock(&impl_->mu);
  if (impl_->started) return Status::FailedPrecondition("the admin server was already started");
  std::string host;
  int port = 0;
  if (Status s = ParseListenAddress(impl_->options.listen, &host, &port); !s.ok()) return s;
  int bound = port;
  if (port == 0) {
    bound = impl_->server.bind_to_any_port(host);
    if (bound < 0) bound = 0;
  } else if (!impl_->server.bind_to_port(host, port)) {
    bound = 0;
  }
  if (bound == 0) {
    return Status::Unavailable("admin server cannot listen on " + impl_->options.listen + ": " +
                               std::strerror(errno));
  }
  impl_->started = true;
  impl_->host = host;
  impl_->port.store(bound);
  // spdlog creates its registry and default logger on first use, inside the (uninstrumented)
  // shared library: do it here, before the request threads can log, or TSan sees the first
  // request's log line race with this thread's first one.
  spdlog::default_logger_raw();
  impl_->thread = std::thread([impl = impl_.get()] {
    impl->server.listen_after_bind();
    impl->listen_returned.store(true);
  });
  // listen_after_bind marks the server running as it enters its accept loop; Stop() before
  // that point would be lost (httplib's stop() only acts on a running server), so wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!impl_->server.is_running() && !impl_->listen_returned.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!impl_->server.is_running()) {
    impl_->server.stop();
    impl_->thread.join();
    impl_->stopped = true;
    return Status::Unavailable("admin server on " + impl_->options.listen + " did not start");
  }
  spdlog::info("admin server listening on {}:{}", host, bound);
  return Status::Ok();
}

void AdminServer::Stop() {
  MutexLock lock(&impl_->mu);
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int AdminServer::port() const { return impl_->port.load(); }

std::string AdminServer::url() const {
  std::string host;
  {
    MutexLock lock(&impl_->mu);
    host = impl_->host;
  }
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port());
}

}  // namespace volcache
