// RestClient::Stream (a watch's body, read with libcurl) against a raw loopback server that
// writes the bytes a test scripts: the chunked framing split anywhere (a line across chunks,
// a chunk header across TCP writes), huge lines, bad chunk headers, a truncated chunk, an
// early EOF, a reset; the read timeout, Cancel during a blocked read, non-200 answers, the
// auth headers; and TLS (the configured CA verified, a client certificate presented).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/line_splitter.h"
#include "kube/rest_client.h"
#include "tests/kube/kube_test_util.h"

namespace volcache::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One accepted connection: plain TCP, or TLS when the server has a context.
class Conn {
 public:
  Conn(int fd, SSL* ssl, std::function<void()> hold) : fd_(fd), ssl_(ssl), hold_(std::move(hold)) {}
  // Keeps the connection open, silent, until the server is destroyed.
  void Hold() { hold_(); }
  // Writes all of `s`; false when the peer is gone.
  bool Write(std::string_view s) {
    while (!s.empty()) {
      int n = ssl_ ? SSL_write(ssl_, s.data(), static_cast<int>(std::min<size_t>(s.size(), 1 << 20)))
                   : static_cast<int>(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL));
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Writes `s` in pieces of `piece` bytes (separate TCP segments with TCP_NODELAY).
  bool WritePieces(std::string_view s, size_t piece) {
    for (size_t i = 0; i < s.size(); i += piece) {
      if (!Write(s.substr(i, piece))) return false;
    }
    return true;
  }
  // Closes with a TCP reset (SO_LINGER 0) instead of a FIN.
  void Reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  SSL* ssl_;
  std::function<void()> hold_;
};

// Accepts connections one at a time; for each reads the request head and runs the script.
class ScriptServer {
 public:
  using Script = std::function<void(Conn& conn, const std::string& request)>;
  explicit ScriptServer(Script script, SSL_CTX* tls = nullptr) : script_(std::move(script)), tls_(tls) {
    listen_fd_ = volcache::testing::ListenLoopback(&port_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ScriptServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      cv_.notify_all();
    }
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  KubeConfig Config() const {
    KubeConfig c;
    c.server = std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
    return c;
  }
  std::string request() {
    std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  void HoldUntilDestroyed() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, seconds(300), [&] { return released_; });
  }

  void Loop() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      SSL* ssl = nullptr;
      if (tls_) {
        ssl = SSL_new(tls_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) <= 0) {  // the client refused us, or we refused the client
          ERR_clear_error();
          SSL_free(ssl);
          ::close(fd);
          continue;
        }
      }
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        int n = ssl ? SSL_read(ssl, buf, sizeof(buf)) : static_cast<int>(::recv(fd, buf, sizeof(buf), 0));
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        request_ = req;
      }
      Conn conn(fd, ssl, [this] { HoldUntilDestroyed(); });
      script_(conn, req);
      if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
      }
      ::close(fd);
    }
  }

  Script script_;
  SSL_CTX* tls_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string request_;
  bool released_ = false;
};

constexpr std::string_view kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

// `body` framed as chunks of `size` bytes (the last one shorter), with the terminating chunk
// when `end`.
std::string Chunked(std::string_view body, size_t size, bool end = true) {
  std::string out;
  for (size_t i = 0; i < body.size(); i += size) {
    std::string_view part = body.substr(i, size);
    char hex[32];
    snprintf(hex, sizeof(hex), "%zx\r\n", part.size());
    out += hex;
    out += part;
    out += "\r\n";
  }
  if (end) out += "0\r\n\r\n";
  return out;
}

// Lines of varied lengths (deterministic), with multi-byte UTF-8 so that a split can fall
// inside a character.
std::vector<std::string> Lines(int n, size_t max_len = 700) {
  std::vector<std::string> out;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::string line = "{\"type\":\"ADDED\",\"i\":" + std::to_string(i) + ",\"s\":\"";
    const size_t len = x % max_len;
    for (size_t j = 0; j < len; ++j)
      line += (j % 11 == 0) ? "\xc3\xa9" : std::string(1, static_cast<char>('a' + j % 26));
    line += "\"}";
    out.push_back(std::move(line));
  }
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::unique_ptr<RestClient> Client(const KubeConfig& config, RestClientOptions options = {}) {
  auto c = RestClient::Create(config, options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

struct Watched {
  RestClient::StreamResult res;
  std::vector<std::string> lines;
  Status finish;  // the splitter's end-of-stream check (only when the transport ended cleanly)
  std::vector<int> answers;
  size_t chunks = 0;
};

Watched Watch(RestClient& client, Duration read_timeout = seconds(60),
              const WatchHandle& handle = WatchHandle(), std::atomic<int>* lines_seen = nullptr) {
  Watched w;
  LineSplitter splitter;
  w.res = client.Stream(
      "/api/v1/pods?watch=true&timeoutSeconds=300", read_timeout,
      [&](std::string_view chunk) {
        ++w.chunks;
        Status s = splitter.Feed(chunk, [&](std::string_view line) {
          w.lines.emplace_back(line);
          if (lines_seen) ++*lines_seen;
          return Status::Ok();
        });
        return s.ok();
      },
      handle, [&](int status) { w.answers.push_back(status); });
  if (w.res.transport.ok()) w.finish = splitter.Finish();
  return w;
}

// Every chunk size, including 1 byte (a chunk per byte: lines and UTF-8 characters split
// everywhere) and sizes around the old 4 KiB and the new 256 KiB read buffer; the framed
// body goes out in TCP writes of yet another size, so chunk headers split too.
TEST(WatchStreamTest, ChunkBoundariesSplittingLinesAnywhereYieldTheSameLines) {
  const std::vector<std::string> lines = Lines(200);
  const std::string body = Join(lines);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{100}, size_t{4095}, size_t{4096},
                       size_t{4097}, size_t{65536}, size_t{(256 << 10) + 1}, body.size()}) {
    for (size_t piece : {size_t{1}, size_t{5}, size_t{1000}, size_t{1} << 20}) {
      // A write per byte or five of a body framed 1, 2 or 3 bytes a chunk: slow, and adds
      // nothing the larger writes do not cover (a chunk header is split either way).
      if (chunk <= 3 && piece <= 5) continue;
      if (piece == 1 && chunk > 4097) continue;
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", write " + std::to_string(piece));
      ScriptServer server([&](Conn& c, const std::string&) {
        c.Write(kChunkedHead);
        c.WritePieces(Chunked(body, chunk), piece);
      });
      auto client = Client(server.Config());
      Watched w = Watch(*client);
      EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
      EXPECT_EQ(w.res.status, 200);
      EXPECT_EQ(w.answers, std::vector<int>{200});
      EXPECT_TRUE(w.finish.ok()) << w.finish;
      ASSERT_EQ(w.lines.size(), lines.size());
      EXPECT_EQ(w.lines, lines);
    }
  }
}

// Chunk extensions and upper-case hex digits are valid HTTP/1.1.
TEST(WatchStreamTest, ChunkExtensionsAndUpperCaseSizesAreAccepted) {
  ScriptServer server([&](Conn& c, const std::string&) {
    c.Write(kChunkedHead);
    c.Write("A;name=value\r\n{\"a\":1}\n{\"\r\n");
    c.Write("1A\r\nb\":222222222222222222222}\n\r\n0\r\n\r\n");  // 26 bytes
  });
  auto client = Client(server.Config());
  Watched w = Watch(*client);
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_EQ(w.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":222222222222222222222}"}));
}

// Lines of several MiB, in one chunk and in many; a line the size of many reads.
TEST(WatchStreamTest, HugeLinesArriveWhole) {
  std::vector<std::string> lines = {std::string(12 << 20, 'x'), "{\"small\":1}", std::string(3 << 20, 'y')};
  lines[0].front() = '{';
  const std::string body = Join(lines);
  for (size_t chunk : {body.size(), size_t{16} << 10, size_t{(1 << 20) + 3}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    ScriptServer server([&](Conn& c, const std::string&) {
      c.Write(kChunkedHead);
      c.WritePieces(Chunked(body, chunk), 300000);
    });
    auto client = Client(server.Config());
    Watched w = Watch(*client);
    EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
    ASSERT_EQ(w.lines.size(), 3u);
    EXPECT_TRUE(w.lines == lines);
  }
}

// A bad chunk header ends the stream with a clear Unavailable error; the lines before it
// were delivered, nothing after it.
TEST(WatchStreamTest, BadChunkHeadersAreTransportErrors) {
  for (std::string bad : {"zz\r\n{\"b\":2}\n\r\n", "-5\r\nabcde\r\n", "FFFFFFFFFFFFFFFFFFFFFF\r\nabc\r\n",
                          "5\r\n{\"b\":2}\n\r\n"}) {  // last: 8 bytes in a chunk of 5
    SCOPED_TRACE(bad);
    ScriptServer server([&](Conn& c, const std::string&) {
      c.Write(kChunkedHead);
      c.Write(Chunked("{\"a\":1}\n", 64, /*end=*/false));
      c.Write(bad);
      c.Write("0\r\n\r\n");
    });
    auto client = Client(server.Config());
    Watched w = Watch(*client);
    EXPECT_EQ(w.res.status, 200);
    EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
    EXPECT_NE(w.res.transport.message().find("WATCH /api/v1/pods?watch=true"), std::string::npos)
        << w.res.transport;
    EXPECT_EQ(w.lines, std::vector<std::string>{"{\"a\":1}"});
    EXPECT_EQ(client->stats().transport_errors, 1u);
  }
}

// The connection ends early: inside a chunk's data, after a complete chunk without the
// terminating one, or with a reset. Each is an Unavailable error naming the watch.
TEST(WatchStreamTest, EarlyEndsAreTransportErrors) {
  struct Case {
    std::string name;
    std::function<void(Conn&)> tail;
    std::vector<std::string> lines;  // the complete lines before the end
  };
  const std::vector<std::string> a = {"{\"a\":1}"}, ab = {"{\"a\":1}", "{\"b\":2}"};
  const std::vector<Case> cases = {
      {"truncated chunk", [](Conn& c) { c.Write("100\r\n{\"b\":2}\n{\"c\""); }, ab},
      {"truncated chunk header", [](Conn& c) { c.Write("10"); }, a},
      {"no terminating chunk", [](Conn& c) { c.Write(Chunked("{\"b\":2}\n", 64, false)); }, ab},
      {"reset",
       [](Conn& c) {
         c.Write(Chunked("{\"b\":2}\n", 64, false));
         c.Reset();
       },
       {}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ScriptServer server([&](Conn& c, const std::string&) {
      c.Write(kChunkedHead);
      c.Write(Chunked("{\"a\":1}\n", 64, false));
      tc.tail(c);
    });
    auto client = Client(server.Config());
    Watched w = Watch(*client);
    EXPECT_EQ(w.res.status, 200);
    EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
    EXPECT_NE(w.res.transport.message().find("WATCH /api/v1/pods"), std::string::npos) << w.res.transport;
    // A reset may discard what the client had not read yet; the other ends lose nothing.
    if (tc.name != "reset") {
      EXPECT_EQ(w.lines, tc.lines);
    }
  }
}

// A stream that is not chunked (Content-Length, or delimited by the close) is read too.
TEST(WatchStreamTest, BodiesWithoutChunkedFramingAreRead) {
  const std::vector<std::string> lines = Lines(50);
  const std::string body = Join(lines);
  ScriptServer with_length([&](Conn& c, const std::string&) {
    c.Write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  Watched w = Watch(*Client(with_length.Config()));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_EQ(w.lines, lines);
  ScriptServer until_close(
      [&](Conn& c, const std::string&) { c.Write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body); });
  w = Watch(*Client(until_close.Config()));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_EQ(w.lines, lines);
}

// A non-200 answer: its status reaches on_answer and the result, its body error_body; no chunk
// goes to the receiver.
TEST(WatchStreamTest, NonOkAnswersCarryTheirBody) {
  const std::string status =
      R"json({"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410})json";
  ScriptServer server([&](Conn& c, const std::string&) {
    c.Write("HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
            Chunked(status, 17));
  });
  auto client = Client(server.Config());
  Watched w = Watch(*client);
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_EQ(w.res.status, 410);
  EXPECT_EQ(w.answers, std::vector<int>{410});
  EXPECT_EQ(w.res.error_body, status);
  EXPECT_EQ(w.chunks, 0u);
}

// The request carries the path, Accept, the User-Agent and the bearer token (or basic auth).
TEST(WatchStreamTest, RequestCarriesPathAndAuthHeaders) {
  ScriptServer server([&](Conn& c, const std::string&) { c.Write(std::string(kChunkedHead) + "0\r\n\r\n"); });
  KubeConfig config = server.Config();
  config.token = "tok-123";
  RestClientOptions options;
  options.user_agent = "volcache-test/1";
  Watched w = Watch(*Client(config, options));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  const std::string req = server.request();
  EXPECT_EQ(req.rfind("GET /api/v1/pods?watch=true&timeoutSeconds=300 HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("\r\nAuthorization: Bearer tok-123\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\nAccept: application/json\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\nUser-Agent: volcache-test/1\r\n"), std::string::npos) << req;

  config.token.clear();
  config.username = "admin";
  config.password = "s3cret";
  w = Watch(*Client(config));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_NE(server.request().find("\r\nAuthorization: Basic " + Base64Encode("admin:s3cret") + "\r\n"),
            std::string::npos)
      << server.request();
}

// A token file is read for the stream (a projected service-account token).
TEST(WatchStreamTest, TokenFileIsSent) {
  const std::string path = ::testing::TempDir() + "watch_stream_token";
  std::ofstream(path) << "from-file\n";
  ScriptServer server([&](Conn& c, const std::string&) { c.Write(std::string(kChunkedHead) + "0\r\n\r\n"); });
  KubeConfig config = server.Config();
  config.token_file = path;
  Watched w = Watch(*Client(config));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_NE(server.request().find("\r\nAuthorization: Bearer from-file\r\n"), std::string::npos)
      << server.request();
}

// Silence longer than the read timeout ends the stream (Unavailable, "read timeout"); gaps
// shorter than it do not.
TEST(WatchStreamTest, ReadTimeoutBoundsTheSilenceBetweenReads) {
  ScriptServer silent([&](Conn& c, const std::string&) {
    c.Write(std::string(kChunkedHead) + Chunked("{\"a\":1}\n", 64, false));
    c.Hold();
  });
  auto client = Client(silent.Config());
  const auto start = std::chrono::steady_clock::now();
  Watched w = Watch(*client, milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
  EXPECT_NE(w.res.transport.message().find("read timeout"), std::string::npos) << w.res.transport;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_EQ(w.lines, std::vector<std::string>{"{\"a\":1}"});

  ScriptServer slow([&](Conn& c, const std::string&) {
    c.Write(kChunkedHead);
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      c.Write(Chunked("{\"i\":" + std::to_string(i) + "}\n", 64, false));
    }
    c.Write("0\r\n\r\n");
  });
  w = Watch(*Client(slow.Config()), seconds(30));
  EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
  EXPECT_EQ(w.lines.size(), 4u);
}

// Cancel from another thread while the stream waits for data: Stream returns Cancelled at
// once, long before the read timeout; a Cancel before the stream starts returns at once too.
TEST(WatchStreamTest, CancelEndsABlockedReadPromptly) {
  ScriptServer server([&](Conn& c, const std::string&) {
    c.Write(std::string(kChunkedHead) + Chunked("{\"a\":1}\n", 64, false));
    c.Hold();
  });
  auto client = Client(server.Config());
  WatchHandle handle;
  std::atomic<int> seen{0};
  std::atomic<bool> returned{false};
  Watched w;
  std::thread watcher([&] {
    w = Watch(*client, seconds(600), handle, &seen);
    returned = true;
  });
  ASSERT_TRUE(testing::Eventually([&] { return seen.load() >= 1; }));
  // The stream is blocked now (the server sends nothing more). Not returned on its own:
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load());
  const auto start = std::chrono::steady_clock::now();
  handle.Cancel();
  // Generous (sanitizers, a loaded machine), but far below the 600 s read timeout.
  EXPECT_TRUE(testing::Eventually([&] { return returned.load(); }, seconds(30)));
  watcher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));
  EXPECT_EQ(w.res.transport.code(), StatusCode::kCancelled) << w.res.transport;
  EXPECT_EQ(w.lines, std::vector<std::string>{"{\"a\":1}"});

  const auto again = std::chrono::steady_clock::now();
  Watched after = Watch(*client, seconds(600), handle);
  EXPECT_EQ(after.res.transport.code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - again, seconds(30));
}

// A receiver that returns false stops the stream (Cancelled, "stopped by the receiver").
TEST(WatchStreamTest, ReceiverStopsTheStream) {
  const std::string body = Join(Lines(200));
  ScriptServer server([&](Conn& c, const std::string&) {
    c.Write(kChunkedHead);
    c.Write(Chunked(body, 1000));
  });
  auto client = Client(server.Config());
  int calls = 0;
  auto res = client->Stream(
      "/w", seconds(60), [&](std::string_view) { return ++calls < 2; }, WatchHandle());
  EXPECT_EQ(res.transport.code(), StatusCode::kCancelled);
  EXPECT_NE(res.transport.message().find("receiver"), std::string::npos) << res.transport;
  EXPECT_EQ(calls, 2);
}

// ----------------------------------------------------------------------------------- TLS

// A CA, a server certificate for 127.0.0.1 and a client certificate, made once with the
// openssl tool (scripts/setup.sh installs it).
struct Pki {
  std::string dir;
  bool ok = false;
  std::string Read(const std::string& name) const {
    std::ifstream in(dir + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

const Pki& TestPki() {
  static const Pki pki = [] {
    Pki p;
    p.dir = ::testing::TempDir() + "watch_stream_pki_" + std::to_string(::getpid());
    std::filesystem::create_directories(p.dir);
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string cmd =
        "cd '" + p.dir +
        "' && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext"
        " && openssl req -x509 " +
        key +
        " -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca"
        " && openssl req -x509 " +
        key +
        " -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=other-ca"
        " && openssl req " +
        key +
        " -keyout server.key -out server.csr -subj /CN=apiserver"
        " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt"
        "    -days 2 -extfile san.ext"
        " && openssl req " +
        key +
        " -keyout client.key -out client.csr -subj /CN=volcache"
        " && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days "
        "2"
        " ) >/dev/null 2>&1";
    p.ok = std::system(("( " + cmd).c_str()) == 0;
    return p;
  }();
  return pki;
}

// A server context presenting server.crt; requiring a client certificate from `ca.crt`
// when `require_client_cert`.
SSL_CTX* ServerContext(const Pki& pki, bool require_client_cert) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  EXPECT_EQ(SSL_CTX_use_certificate_file(ctx, (pki.dir + "/server.crt").c_str(), SSL_FILETYPE_PEM), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx, (pki.dir + "/server.key").c_str(), SSL_FILETYPE_PEM), 1);
  if (require_client_cert) {
    EXPECT_EQ(SSL_CTX_load_verify_locations(ctx, (pki.dir + "/ca.crt").c_str(), nullptr), 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

TEST(WatchStreamTest, TlsVerifiesTheConfiguredCaAndPresentsTheClientCertificate) {
  const Pki& pki = TestPki();
  if (!pki.ok) GTEST_SKIP() << "SKIP: the openssl tool could not make test certificates";
  SSL_CTX* ctx = ServerContext(pki, /*require_client_cert=*/true);
  const std::vector<std::string> lines = Lines(300, 5000);
  const std::string body = Join(lines);
  {
    ScriptServer server(
        [&](Conn& c, const std::string&) {
          c.Write(kChunkedHead);
          c.WritePieces(Chunked(body, 4000), 70000);
        },
        ctx);
    KubeConfig config = server.Config();
    config.ca_pem = pki.Read("ca.crt");
    config.client_cert_pem = pki.Read("client.crt");
    config.client_key_pem = pki.Read("client.key");
    config.token = "tls-token";
    Watched w = Watch(*Client(config));
    EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
    EXPECT_EQ(w.res.status, 200);
    EXPECT_EQ(w.lines, lines);
    EXPECT_NE(server.request().find("\r\nAuthorization: Bearer tls-token\r\n"), std::string::npos);

    // Another CA: the server is not trusted, nothing is delivered.
    config.ca_pem = pki.Read("other-ca.crt");
    w = Watch(*Client(config));
    EXPECT_EQ(w.res.status, 0);
    EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
    EXPECT_NE(w.res.transport.message().find("certificate"), std::string::npos) << w.res.transport;
    EXPECT_TRUE(w.lines.empty());

    // insecure-skip-tls-verify: the same server is accepted.
    config.insecure_skip_tls_verify = true;
    w = Watch(*Client(config));
    EXPECT_TRUE(w.res.transport.ok()) << w.res.transport;
    EXPECT_EQ(w.lines.size(), lines.size());

    // No client certificate: the server refuses the handshake.
    config.insecure_skip_tls_verify = false;
    config.ca_pem = pki.Read("ca.crt");
    config.client_cert_pem.clear();
    config.client_key_pem.clear();
    w = Watch(*Client(config));
    EXPECT_EQ(w.res.status, 0);
    EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
    EXPECT_TRUE(w.lines.empty());
  }
  SSL_CTX_free(ctx);
}

TEST(WatchStreamTest, TlsStreamCancelsAndTimesOut) {
  const Pki& pki = TestPki();
  if (!pki.ok) GTEST_SKIP() << "SKIP: the openssl tool could not make test certificates";
  SSL_CTX* ctx = ServerContext(pki, /*require_client_cert=*/false);
  {
    ScriptServer server(
        [&](Conn& c, const std::string&) {
          c.Write(std::string(kChunkedHead) + Chunked("{\"a\":1}\n", 64, false));
          c.Hold();
        },
        ctx);
    KubeConfig config = server.Config();
    config.ca_pem = pki.Read("ca.crt");
    auto client = Client(config);
    Watched w = Watch(*client, milliseconds(300));
    EXPECT_EQ(w.res.transport.code(), StatusCode::kUnavailable) << w.res.transport;
    EXPECT_EQ(w.lines, std::vector<std::string>{"{\"a\":1}"});
  }
  {
    ScriptServer server(
        [&](Conn& c, const std::string&) {
          c.Write(std::string(kChunkedHead) + Chunked("{\"a\":1}\n", 64, false));
          c.Hold();
        },
        ctx);
    KubeConfig config = server.Config();
    config.ca_pem = pki.Read("ca.crt");
    auto client = Client(config);
    WatchHandle handle;
    std::atomic<int> seen{0};
    std::atomic<bool> returned{false};
    Watched w;
    std::thread watcher([&] {
      w = Watch(*client, seconds(600), handle, &seen);
      returned = true;
    });
    ASSERT_TRUE(testing::Eventually([&] { return seen.load() >= 1; }));
    handle.Cancel();
    EXPECT_TRUE(testing::Eventually([&] { return returned.load(); }, seconds(30)));
    watcher.join();
    EXPECT_EQ(w.res.transport.code(), StatusCode::kCancelled) << w.res.transport;
  }
  SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace volcache::kube
