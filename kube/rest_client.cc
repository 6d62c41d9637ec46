#include "kube/rest_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "api/fmt.h"
#include "api/k8s/decode.h"
#include "api/mutex.h"
#include "workers/rate_limiter.h"

namespace volcache::kube {

namespace {

struct ParsedUrl {
  bool https = true;
  std::string host;
  int port = 443;
  std::string base_path;  // no trailing slash
};

Result<ParsedUrl> ParseServer(const std::string& server) {
  ParsedUrl u;
  std::string_view s = server;
  if (s.rfind("https://", 0) == 0) {
    s.remove_prefix(8);
  } else if (s.rfind("http://", 0) == 0) {
    u.https = false;
    u.port = 80;
    s.remove_prefix(7);
  } else {
    return Status::InvalidArgument(fmt::format("server \"{}\": expected an http(s) URL", server));
  }
  size_t slash = s.find('/');
  std::string_view hostport = s.substr(0, slash);
  if (slash != std::string_view::npos) u.base_path = std::string(s.substr(slash));
  while (!u.base_path.empty() && u.base_path.back() == '/') u.base_path.pop_back();
  if (!hostport.empty() && hostport.front() == '[') {  // [v6]:port
    size_t close = hostport.find(']');
    if (close == std::string_view::npos)
      return Status::InvalidArgument(fmt::format("server \"{}\": bad IPv6 host", server));
    u.host = std::string(hostport.substr(1, close - 1));
    hostport.remove_prefix(close + 1);
    if (!hostport.empty() && hostport.front() == ':')
      hostport.remove_prefix(1);
    else
      hostport = {};
  } else {
    size_t colon = hostport.rfind(':');
    u.host = std::string(hostport.substr(0, colon));
    hostport = colon == std::string_view::npos ? std::string_view() : hostport.substr(colon + 1);
  }
  if (!hostport.empty()) {
    int port = 0;
    auto [p, ec] = std::from_chars(hostport.data(), hostport.data() + hostport.size(), port);
    if (ec != std::errc() || p != hostport.data() + hostport.size() || port <= 0 || port > 65535) {
      return Status::InvalidArgument(fmt::format("server \"{}\": bad port", server));
    }
    u.port = port;
  }
  if (u.host.empty()) return Status::InvalidArgument(fmt::format("server \"{}\": missing host", server));
  return u;
}

Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FailedPrecondition(fmt::format("{} {}: cannot read the file", what, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

template <typename D>
std::pair<time_t, time_t> SecUsec(D d) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  if (us < 0) us = 0;
  return {static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000)};
}

Status TransportError(httplib::Error err, std::string_view method, const std::string& path) {
  std::string msg = fmt::format("{} {}: {}", method, path, httplib::to_string(err));
  if (err == httplib::Error::ConnectionTimeout) return Status::DeadlineExceeded(msg);
  if (err == httplib::Error::Read) return Status::Unavailable(msg + " (connection lost or read timeout)");
  return Status::Unavailable(msg);
}

// True when an idle keep-alive socket can no longer carry a request: the server closed it
// (readable EOF, CLOSE-WAIT on our side) or sent something unsolicited (a TLS close_notify,
// an HTTP 408). An idle HTTP/1.1 connection has nothing to read.
bool IdleSocketStale(socket_t fd) {
  if (fd == INVALID_SOCKET) return false;  // not connected: the next request connects afresh
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, 0);
  return r != 0;  // readable, hung up, or poll failed
}

// Per-verb latency histogram (non-cumulative counts per bucket; the last is +Inf).
struct LatencyAcc {
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;
};

}  // namespace

const std::vector<double>& RestClientMetrics::LatencyBuckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                               0.25,  0.5,    1,     2.5,  5,     10};
  return kBuckets;
}

// ------------------------------------------------------------------------ WatchHandle

struct WatchHandle::State {
  Mutex mu;
  std::atomic<bool> cancelled{false};      // set under mu; read without it on the stream's thread
  CURLM* active GUARDED_BY(mu) = nullptr;  // the stream in progress: woken by Cancel
};

WatchHandle::WatchHandle() : state_(std::make_shared<State>()) {}

void WatchHandle::Cancel() const {
  MutexLock lock(&state_->mu);
  state_->cancelled.store(true, std::memory_order_release);
  if (state_->active) curl_multi_wakeup(state_->active);  // the stream's poll returns at once
}

bool WatchHandle::cancelled() const { return state_->cancelled.load(std::memory_order_acquire); }

// ------------------------------------------------------------------------- RestClient

struct RestClient::Impl {
  KubeConfig config;
  RestClientOptions options;
  ParsedUrl url;
  std::unique_ptr<BucketRateLimiter> limiter;         // RequestClass::kDefault
  std::unique_ptr<BucketRateLimiter> status_limiter;  // RequestClass::kStatus

  // TLS material parsed once (SSL_CTX_use_* takes its own references); the PEM text too,
  // for the watch streams' libcurl handles.
  X509* client_cert = nullptr;
  EVP_PKEY* client_key = nullptr;
  std::vector<X509*> ca_certs;
  std::string client_cert_pem, client_key_pem, ca_pem;

  struct Idle {
    std::unique_ptr<httplib::ClientImpl> client;
    std::chrono::steady_clock::time_point since;
  };

  // Everything above is set by Create and read-only afterwards; everything below is guarded
  // by mu. Nothing that blocks (a request, a rate limiter's sleep, closing a TLS client)
  // runs with mu held: the functions that do are EXCLUDES(mu).
  mutable Mutex mu;
  std::vector<Idle> idle GUARDED_BY(mu);  // most recently released last
  std::string token GUARDED_BY(mu);
  std::chrono::steady_clock::time_point token_read GUARDED_BY(mu);
  RestClientStats stats GUARDED_BY(mu);
  std::map<std::pair<std::string, int>, uint64_t> by_code GUARDED_BY(mu);  // (verb, code) -> requests
  std::map<std::string, LatencyAcc> latency GUARDED_BY(mu);                // verb -> histogram
  Duration limiter_wait GUARDED_BY(mu){0};
  uint64_t rate_limited GUARDED_BY(mu) = 0;
  uint64_t stale_retries GUARDED_BY(mu) = 0;
  uint64_t stale_connections GUARDED_BY(mu) = 0;

  void Observe(std::string_view verb, int code, Duration took) EXCLUDES(mu) {
    MutexLock lock(&mu);
    ++by_code[{std::string(verb), code}];
    LatencyAcc& acc = latency[std::string(verb)];
    const auto& bounds = RestClientMetrics::LatencyBuckets();
    if (acc.counts.empty()) acc.counts.assign(bounds.size() + 1, 0);
    const double secs = std::chrono::duration<double>(took).count();
    size_t i = std::lower_bound(bounds.begin(), bounds.end(), secs) - bounds.begin();
    ++acc.counts[i];
    acc.sum += secs;
    ++acc.count;
  }

  ~Impl() {
    idle.clear();  // a destructor: no other thread can hold mu
    if (client_cert) X509_free(client_cert);
    if (client_key) EVP_PKEY_free(client_key);
    for (X509* c : ca_certs) X509_free(c);
  }

  Status LoadTls() {
    if (!url.https) return Status::Ok();
    std::string cert = config.client_cert_pem, key = config.client_key_pem;
    if (cert.empty() && !config.client_cert_file.empty()) {
      auto r = ReadFile(config.client_cert_file, "client certificate");
      if (!r.ok()) return r.status();
      cert = *r;
    }
    if (key.empty() && !config.client_key_file.empty()) {
      auto r = ReadFile(config.client_key_file, "client key");
      if (!r.ok()) return r.status();
      key = *r;
    }
    if (!cert.empty()) {
      BIO* b = BIO_new_mem_buf(cert.data(), static_cast<int>(cert.size()));
      client_cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
      BIO_free(b);
      if (!client_cert) return Status::InvalidArgument("client certificate: not a PEM certificate");
      BIO* k = BIO_new_mem_buf(key.data(), static_cast<int>(key.size()));
      client_key = PEM_read_bio_PrivateKey(k, nullptr, nullptr, nullptr);
      BIO_free(k);
      if (!client_key) return Status::InvalidArgument("client key: not a PEM private key");
      client_cert_pem = cert;
      client_key_pem = key;
    }
    std::string ca = config.ca_pem;
    if (ca.empty() && !config.ca_file.empty()) {
      auto r = ReadFile(config.ca_file, "certificate authority");
      if (!r.ok()) return r.status();
      ca = *r;
    }
    if (!ca.empty()) {
      BIO* b = BIO_new_mem_buf(ca.data(), static_cast<int>(ca.size()));
      while (X509* c = PEM_read_bio_X509(b, nullptr, nullptr, nullptr)) ca_certs.push_back(c);
      BIO_free(b);
      ERR_clear_error();  // the end-of-data "error" after the last certificate
      if (ca_certs.empty()) return Status::InvalidArgument("certificate authority: no PEM certificate found");
      ca_pem = ca;
    }
    return Status::Ok();
  }

  // The bearer token for the next request: the kubeconfig's, or the token file's re-read at
  // most once per options.token_file_refresh (a minute), as client-go does (a projected service-account token
  // is rotated while keep-alive connections live on). The file is read outside the lock.
  std::string Token() EXCLUDES(mu) {
    if (config.token_file.empty()) return config.token;
    const auto now = std::chrono::steady_clock::now();
    {
      MutexLock lock(&mu);
      if (!token.empty() && now - token_read < options.token_file_refresh) return token;
    }
    auto r = ReadFile(config.token_file, "token file");
    MutexLock lock(&mu);
    if (r.ok()) {
      token = Trim(*r);
      token_read = now;
    } else if (token.empty()) {
      spdlog::warn("{}", r.status().message());
    }
    return token;
  }

  std::unique_ptr<httplib::ClientImpl> NewClient(Duration read_timeout) EXCLUDES(mu) {
    std::unique_ptr<httplib::ClientImpl> c;
    if (url.https) {
      auto ssl = std::make_unique<httplib::SSLClient>(url.host, url.port, client_cert, client_key);
      if (!ca_certs.empty()) {
        X509_STORE* store = X509_STORE_new();  // owned by the client's SSL_CTX
        for (X509* cert : ca_certs) X509_STORE_add_cert(store, cert);
        ssl->set_ca_cert_store(store);
      }
      ssl->enable_server_certificate_verification(!config.insecure_skip_tls_verify);
      c = std::move(ssl);
    } else {
      c = std::make_unique<httplib::ClientImpl>(url.host, url.port);
    }
    auto [cs, cu] = SecUsec(options.connect_timeout);
    c->set_connection_timeout(cs, cu);
    auto [rs, ru] = SecUsec(read_timeout);
    c->set_read_timeout(rs, ru);
    auto [ws, wu] = SecUsec(options.request_timeout);
    c->set_write_timeout(ws, wu);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // headers and body go out in separate writes: no Nagle stall
    std::string tok = Token();
    if (!tok.empty()) c->set_bearer_token_auth(tok);
    if (!config.username.empty()) c->set_basic_auth(config.username, config.password);
    c->set_default_headers({{"Accept", "application/json"}, {"User-Agent", options.user_agent}});
    MutexLock lock(&mu);
    ++stats.connections;
    return c;
  }

  // A pooled connection that is still usable (`*reused` true), else a new one. Connections
  // idle longer than idle_timeout, or that the server closed, are dropped (outside mu: a
  // TLS client's destructor may write a close_notify).
  std::unique_ptr<httplib::ClientImpl> Acquire(bool* reused) EXCLUDES(mu) {
    std::vector<std::unique_ptr<httplib::ClientImpl>> dropped;
    std::unique_ptr<httplib::ClientImpl> found;
    {
      MutexLock lock(&mu);
      const auto now = std::chrono::steady_clock::now();
      while (!idle.empty()) {
        Idle e = std::move(idle.back());
        idle.pop_back();
        if (now - e.since > options.idle_timeout || IdleSocketStale(e.client->socket())) {
          ++stale_connections;
          dropped.push_back(std::move(e.client));
          continue;
        }
        found = std::move(e.client);
        break;
      }
    }
    dropped.clear();
    *reused = found != nullptr && found->is_socket_open();
    if (found) return found;
    return NewClient(options.request_timeout);
  }

  void DropIdle() EXCLUDES(mu) {
    std::vector<Idle> dropped;
    {
      MutexLock lock(&mu);
      dropped.swap(idle);
      stale_connections += dropped.size();
    }
  }

  void Release(std::unique_ptr<httplib::ClientImpl> c) EXCLUDES(mu) {
    MutexLock lock(&mu);
    if (idle.size() < options.max_idle_connections)
      idle.push_back({std::move(c), std::chrono::steady_clock::now()});
  }

  void Throttle(RequestClass cls) EXCLUDES(mu) {
    BucketRateLimiter* l = cls == RequestClass::kStatus ? status_limiter.get() : limiter.get();
    if (!l) return;
    Duration d = l->When("");
    if (d <= Duration::zero()) return;
    {
      MutexLock lock(&mu);
      limiter_wait += d;
      ++rate_limited;
    }
    std::this_thread::sleep_for(d);
  }
};

RestClient::RestClient() : impl_(std::make_unique<Impl>()) {}
RestClient::~RestClient() = default;

Result<std::unique_ptr<RestClient>> RestClient::Create(const KubeConfig& config, RestClientOptions options) {
  auto url = ParseServer(config.server);
  if (!url.ok()) return url.status();
  std::unique_ptr<RestClient> c(new RestClient());
  Impl& m = *c->impl_;
  m.config = config;
  m.options = options;
  m.url = *url;
  if (!m.options.clock) m.options.clock = RealClock::Instance();
  if (options.qps > 0)
    m.limiter = std::make_unique<BucketRateLimiter>(options.qps, std::max(1, options.burst), m.options.clock);
  if (options.status_qps > 0) {
    m.status_limiter = std::make_unique<BucketRateLimiter>(
        options.status_qps, std::max(1, options.status_burst), m.options.clock);
  }
  Status tls = m.LoadTls();
  if (!tls.ok()) return tls.WithPrefix("kubeconfig context " + config.context);
  return c;
}

const std::string& RestClient::server() const { return impl_->config.server; }

RestClientStats RestClient::stats() const {
  MutexLock lock(&impl_->mu);
  return impl_->stats;
}

RestClientMetrics RestClient::metrics() const {
  const Impl& m = *impl_;
  RestClientMetrics out;
  MutexLock lock(&m.mu);
  for (const auto& [key, n] : m.by_code) out.requests.push_back({key.first, key.second, n});
  for (const auto& [verb, acc] : m.latency) {
    RestClientMetrics::Latency l;
    l.verb = verb;
    uint64_t running = 0;
    for (uint64_t c : acc.counts) l.cumulative.push_back(running += c);
    l.sum_seconds = acc.sum;
    l.count = acc.count;
    out.latency.push_back(std::move(l));
  }
  out.rate_limiter_wait_seconds = std::chrono::duration<double>(m.limiter_wait).count();
  out.rate_limited = m.rate_limited;
  out.stale_retries = m.stale_retries;
  out.stale_connections = m.stale_connections;
  return out;
}

Result<HttpResponse> RestClient::Do(std::string_view method, const std::string& path, std::string_view body,
                                    std::string_view content_type, RequestClass cls) {
  Impl& m = *impl_;
  const std::string full = m.url.base_path + path;
  bool stale_retried = false;
  for (int attempt = 0;; ++attempt) {
    m.Throttle(cls);
    bool reused = false;
    auto client = m.Acquire(&reused);
    // A pooled connection carries the token it was made with: refresh it per request.
    if (!m.config.token_file.empty()) client->set_bearer_token_auth(m.Token());
    if (method != "GET" && m.options.write_gate) {
      if (Status gate = m.options.write_gate(); !gate.ok()) {
        m.Release(std::move(client));
        return gate.WithPrefix(fmt::format("{} {}", method, path));
      }
    }
    httplib::Request req;
    req.method = std::string(method);
    req.path = full;
    req.headers = {{"Accept", "application/json"}, {"User-Agent", m.options.user_agent}};
    if (!body.empty() || method != "GET") {
      req.body.assign(body.data(), body.size());
      req.headers.emplace("Content-Type", std::string(content_type));
    }
    // Set once the status line and headers were parsed: from then on the request reached
    // the server and must not be re-sent blindly.
    bool answered = false;
    req.response_handler = [&answered](const httplib::Response&) {
      answered = true;
      return true;
    };
    const auto start = std::chrono::steady_clock::now();
    httplib::Result res = client->send(req);
    const Duration took = std::chrono::steady_clock::now() - start;
    {
      MutexLock lock(&m.mu);
      ++m.stats.requests;
      if (!res) ++m.stats.transport_errors;
      if (res && res->status == 429) ++m.stats.throttled;
    }
    m.Observe(method, res ? res->status : 0, took);
    if (!res) {  // the connection is dropped
      const httplib::Error err = res.error();
      // The server closed the keep-alive connection as we sent: nothing was answered, and
      // the failure was quick (a read timeout means the server may still be working on it).
      const bool quick = took < m.options.request_timeout / 2;
      if (reused && !answered && !stale_retried && quick &&
          (err == httplib::Error::Write || err == httplib::Error::Read ||
           err == httplib::Error::SSLConnection)) {
        stale_retried = true;
        {
          MutexLock lock(&m.mu);
          ++m.stale_retries;
        }
        spdlog::debug("{} {}: {} on a reused connection before any answer; retrying on a fresh one", method,
                      path, httplib::to_string(err));
        client.reset();
        m.DropIdle();  // its siblings idled as long: likely closed too
        continue;
      }
      return TransportError(err, method, path);
    }
    HttpResponse out;
    out.status = res->status;
    out.body = std::move(res->body);
    out.retry_after = res->get_header_value("Retry-After");
    m.Release(std::move(client));
    if (out.status == 429 && !out.retry_after.empty() && attempt < m.options.max_retries) {
      int secs = 1;
      std::from_chars(out.retry_after.data(), out.retry_after.data() + out.retry_after.size(), secs);
      Duration wait = std::min<Duration>(std::chrono::seconds(std::max(0, secs)), m.options.max_retry_after);
      std::this_thread::sleep_for(wait);
      continue;
    }
    return out;
  }
}

// ------------------------------------------------------------------------------ streams
//
// A watch is read with libcurl, not cpp-httplib: Debian ships cpp-httplib compiled
// (libcpp-httplib.so) with a 4 KiB receive buffer, so a watch of 4.8 KB pod events cost a
// poll and a recv per 4 KiB — about 30 % of the stream thread's time. libcurl reads up to
// kStreamBufferBytes per recv/SSL_read and decodes the chunked transfer encoding in place;
// the multi interface gives an idle (read) timeout in milliseconds and a prompt Cancel
// (curl_multi_wakeup) while the thread waits for data.

namespace {

constexpr long kStreamBufferBytes = 256 << 10;

void CurlGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct StreamCtx {
  CURL* easy = nullptr;
  const std::function<bool(std::string_view)>* on_chunk = nullptr;
  const std::function<void(int)>* on_answer = nullptr;
  const WatchHandle* handle = nullptr;
  RestClient::StreamResult* out = nullptr;
  bool stopped_by_receiver = false;
  std::chrono::steady_clock::time_point last_read;
};

// One header line at a time; the empty line ends a response's headers (a 1xx interim
// response has its own, and is skipped).
size_t StreamHeader(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<StreamCtx*>(user);
  const size_t len = size * n;
  c->last_read = std::chrono::steady_clock::now();
  if (len <= 2 && (len == 0 || data[0] == '\r' || data[0] == '\n')) {
    long code = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && c->out->status == 0) {
      c->out->status = static_cast<int>(code);
      if (*c->on_answer) (*c->on_answer)(c->out->status);
    }
  }
  return len;
}

// Body bytes, the chunked framing removed. Returning less than `n` aborts the transfer.
size_t StreamBody(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<StreamCtx*>(user);
  const size_t len = size * n;
  c->last_read = std::chrono::steady_clock::now();
  if (c->out->status != 200) {
    if (c->out->error_body.size() < (1u << 20)) c->out->error_body.append(data, len);
    return len;
  }
  if (c->handle->cancelled() || !(*c->on_chunk)(std::string_view(data, len))) {
    c->stopped_by_receiver = true;
    return 0;
  }
  c->last_read = std::chrono::steady_clock::now();  // the receiver may have waited (backpressure)
  return len;
}

}  // namespace

RestClient::StreamResult RestClient::Stream(const std::string& path, Duration read_timeout,
                                            const std::function<bool(std::string_view)>& on_chunk,
                                            const WatchHandle& handle,
                                            const std::function<void(int status)>& on_answer) {
  Impl& m = *impl_;
  StreamResult out;
  if (handle.cancelled()) {
    out.transport = Status::Cancelled("watch cancelled");
    return out;
  }
  m.Throttle(RequestClass::kDefault);
  CurlGlobalInit();
  const auto start = std::chrono::steady_clock::now();
  const std::string url =
      fmt::format("{}://{}:{}{}{}", m.url.https ? "https" : "http",
                  m.url.host.find(':') != std::string::npos ? "[" + m.url.host + "]" : m.url.host, m.url.port,
                  m.url.base_path, path);
  StreamCtx ctx;
  ctx.on_chunk = &on_chunk;
  ctx.on_answer = &on_answer;
  ctx.handle = &handle;
  ctx.out = &out;
  ctx.last_read = start;
  char errbuf[CURL_ERROR_SIZE] = {0};

  CURL* easy = curl_easy_init();
  CURLM* multi = curl_multi_init();
  ctx.easy = easy;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  const std::string token = m.Token();
  if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, m.options.user_agent.c_str());
  if (!m.config.username.empty()) {
    curl_easy_setopt(easy, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(easy, CURLOPT_USERNAME, m.config.username.c_str());
    curl_easy_setopt(easy, CURLOPT_PASSWORD, m.config.password.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");  // as the rest of this client: no proxy
  curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, kStreamBufferBytes);
  curl_easy_setopt(
      easy, CURLOPT_CONNECTTIMEOUT_MS,
      static_cast<long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(m.options.connect_timeout).count()));
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &StreamHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &ctx);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &StreamBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &ctx);
  if (m.url.https) {
    const bool verify = !m.config.insecure_skip_tls_verify;
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
    if (!m.ca_pem.empty()) {  // the configured CA only, as the pooled clients' store
      curl_blob ca{m.ca_pem.data(), m.ca_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca);
      curl_easy_setopt(easy, CURLOPT_CAINFO, static_cast<const char*>(nullptr));  // not the system's too
      curl_easy_setopt(easy, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
    }
    if (!m.client_cert_pem.empty()) {
      curl_blob cert{m.client_cert_pem.data(), m.client_cert_pem.size(), CURL_BLOB_COPY};
      curl_blob key{m.client_key_pem.data(), m.client_key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    }
  }
  curl_multi_add_handle(multi, easy);
  {
    MutexLock lock(&m.mu);
    ++m.stats.streams;
    ++m.stats.requests;
    ++m.stats.connections;  // a stream holds its own connection: never pooled
  }
  bool registered = false;
  {
    MutexLock lock(&handle.state_->mu);
    if (!handle.cancelled()) {
      handle.state_->active = multi;
      registered = true;
    }
  }
  bool timed_out = false;
  CURLcode result = CURLE_OK;
  std::string multi_error;
  if (registered) {
    for (;;) {
      int running = 0;
      const CURLMcode mc = curl_multi_perform(multi, &running);
      if (mc != CURLM_OK) {
        multi_error = curl_multi_strerror(mc);
        break;
      }
      if (running == 0) {
        int left = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
          if (msg->msg == CURLMSG_DONE) result = msg->data.result;
        }
        break;
      }
      if (handle.cancelled()) break;
      const auto idle = std::chrono::steady_clock::now() - ctx.last_read;
      if (idle >= read_timeout) {
        timed_out = true;
        break;
      }
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(read_timeout - idle).count() + 1;
      curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::min<int64_t>(wait, 1000)), nullptr);
    }
  }
  {
    MutexLock lock(&handle.state_->mu);
    handle.state_->active = nullptr;
  }
  curl_multi_remove_handle(multi, easy);
  curl_easy_cleanup(easy);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);

  if (handle.cancelled()) {
    out.transport = Status::Cancelled("watch cancelled");
  } else if (ctx.stopped_by_receiver) {
    out.transport = Status::Cancelled("stopped by the receiver");
  } else if (timed_out || !multi_error.empty() || result != CURLE_OK) {
    std::string what;
    if (timed_out) {
      what = fmt::format("no data for {} ms (read timeout)",
                         std::chrono::duration_cast<std::chrono::milliseconds>(read_timeout).count());
    } else if (!multi_error.empty()) {
      what = multi_error;
    } else {
      what = fmt::format("{} (curl error {})", errbuf[0] ? errbuf : curl_easy_strerror(result),
                         static_cast<int>(result));
    }
    std::string msg = fmt::format("WATCH {}: {}", path, what);
    {
      MutexLock lock(&m.mu);
      ++m.stats.transport_errors;
    }
    // A failed connect within the connect timeout is DeadlineExceeded, as before; a stream
    // that broke (reset, truncated or malformed chunk, silence) is Unavailable.
    out.transport = result == CURLE_OPERATION_TIMEDOUT && out.status == 0 ? Status::DeadlineExceeded(msg)
                                                                          : Status::Unavailable(msg);
  }
  m.Observe("WATCH", out.status, std::chrono::steady_clock::now() - start);
  return out;
}

// ------------------------------------------------------------------------------ errors

Status ApiError(int code, std::string_view body, std::string_view what) {
  if (code >= 200 && code < 300) return Status::Ok();
  std::string detail;
  std::string reason;
  if (!body.empty()) {
    auto st = k8s::DecodeApiStatus(body);
    if (st.ok() && !st->message.empty()) {
      detail = st->message;
      reason = st->reason;
    } else {
      detail = std::string(body.substr(0, 200));
      while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
    }
  }
  std::string msg = detail.empty() ? fmt::format("{}: HTTP {}", what, code)
                                   : fmt::format("{}: HTTP {}: {}", what, code, detail);
  switch (code) {
    case 400:
    case 422:
      return Status::InvalidArgument(msg);
    case 401:
    case 403:
      return Status::FailedPrecondition(msg + " (check the credentials and RBAC)");
    case 404:
      return Status::NotFound(msg);
    case 409:
      return reason == "AlreadyExists" ? Status::AlreadyExists(msg) : Status::Conflict(msg);
    case 410:
      return Status::FailedPrecondition(msg);
    case 429:
      return Status::ResourceExhausted(msg);
    default:
      return Status::Unavailable(msg);
  }
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace volcache::kube
