#include "bench/loopback_binding_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "api/mutex.h"

namespace volcache::bench {

namespace {

constexpr char kSuccess[] =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})";

void Fail(httplib::Response& res, int code, const std::string& message) {
  nlohmann::json body = {
      {"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"message", message}, {"code", code}};
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

// The fields of a Binding the server checks, read by nlohmann's SAX parser (no DOM: the
// server shares the two cores with the client it measures). Any JSON is accepted; fields
// that are absent stay empty.
class BindingFields final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string kind, name, namespace_, node;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& v) override {
    if (keys_.size() == 1 && keys_[0] == "kind") kind = v;
    if (keys_.size() == 2 && keys_[0] == "metadata" && keys_[1] == "name") name = v;
    if (keys_.size() == 2 && keys_[0] == "metadata" && keys_[1] == "namespace") namespace_ = v;
    if (keys_.size() == 2 && keys_[0] == "target" && keys_[1] == "name") node = v;
    return true;
  }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    keys_.back() = k;
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    keys_.emplace_back("[]");  // nothing inside an array is read
    return true;
  }
  bool end_array() override {
    keys_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  std::vector<std::string> keys_;  // per open container: the current key ("[]" for arrays)
};

}  // namespace

struct LoopbackBindingServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  int listen_fd = -1;  // set by the socket-options callback, before the server thread starts

  Mutex mu;
  std::unordered_map<std::string, Binding> bindings GUARDED_BY(mu);
  uint64_t bad GUARDED_BY(mu) = 0;

  void HandleBinding(const httplib::Request& req, httplib::Response& res) EXCLUDES(mu) {
    const std::string ns = req.matches[1], name = req.matches[2];
    BindingFields f;
    const bool parsed = nlohmann::json::sax_parse(req.body, &f, nlohmann::json::input_format_t::json,
                                                  /*strict=*/true, /*ignore_comments=*/false);
    std::string node;
    if (parsed && f.kind == "Binding" && f.name == name && f.namespace_ == ns) node = std::move(f.node);
    if (node.empty()) {
      {
        MutexLock lock(&mu);
        ++bad;
      }
      return Fail(res, 400, "not a Binding for pod " + ns + "/" + name);
    }
    {
      MutexLock lock(&mu);
      Binding& b = bindings[ns + "/" + name];
      b.node = std::move(node);
      ++b.count;
    }
    res.status = 201;
    res.set_content(kSuccess, sizeof(kSuccess) - 1, "application/json");
  }
};

LoopbackBindingServer::LoopbackBindingServer(int threads) : impl_(std::make_unique<Impl>()) {
  httplib::Server& srv = impl_->server;
  const size_t n = static_cast<size_t>(std::max(1, threads));
  srv.new_task_queue = [n] { return new httplib::ThreadPool(n); };
  srv.set_keep_alive_max_count(1u << 30);  // the default (5) would defeat connection reuse
  srv.set_tcp_nodelay(true);
  Impl* impl = impl_.get();
  srv.set_socket_options([impl](socket_t sock) {
    httplib::default_socket_options(sock);
    if (impl->listen_fd < 0) impl->listen_fd = sock;  // the first socket is the listener
  });
  srv.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
           [impl](const httplib::Request& req, httplib::Response& res) { impl->HandleBinding(req, res); });
  srv.set_error_handler([impl](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) {
      MutexLock lock(&impl->mu);
      ++impl->bad;
    }
  });
}

LoopbackBindingServer::~LoopbackBindingServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Status LoopbackBindingServer::Start() {
  impl_->port = impl_->server.bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0) return Status::Unavailable("loopback binding server: no port on 127.0.0.1");
  // cpp-httplib 0.11 listens with a backlog of 5: a client opening its keep-alive pool at once
  // overflows it, and the dropped handshakes come back a second later (SYN retransmit).
  // Listening again on the same socket raises the backlog (Linux).
  if (impl_->listen_fd >= 0 && ::listen(impl_->listen_fd, SOMAXCONN) != 0) {
    return Status::Unavailable("loopback binding server: listen: backlog not raised");
  }
  impl_->thread = std::thread([impl = impl_.get()] { impl->server.listen_after_bind(); });
  return Status::Ok();
}

std::string LoopbackBindingServer::url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }

std::unordered_map<std::string, LoopbackBindingServer::Binding> LoopbackBindingServer::TakeBindings() {
  MutexLock lock(&impl_->mu);
  return std::exchange(impl_->bindings, {});
}

uint64_t LoopbackBindingServer::bad_requests() const {
  MutexLock lock(&impl_->mu);
  return impl_->bad;
}

}  // namespace volcache::bench
