// The fixture every integration binary shares: one real API server per binary (SetUpTestSuite
// `up`, TearDownTestSuite `down`), skipped with "SKIP: <why>" when the tools are missing.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace volcache::integration {

class RealServerTest : public ::testing::Test {
 protected:
  static void UpServer(const std::string& extra_args) {
    skip_.clear();
    error_.clear();
    auto t0 = std::chrono::steady_clock::now();
    server_ = KubeApiServer::Up(extra_args, &skip_, &error_);
    if (!skip_.empty()) std::cout << skip_ << std::endl;
    if (server_) {
      std::cout << "integration: kube-apiserver up in "
                << Seconds(std::chrono::steady_clock::now() - t0).count() << " s at " << server_->server()
                << " (dir " << server_->dir() << ")" << std::endl;
    }
  }
  static void DownServer() { server_.reset(); }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
    ASSERT_NE(server_, nullptr);
  }

  KubeApiServer& server() { return *server_; }
  KubeClient Admin() { return server_->Admin(); }

  // `volcache serve` as admin against the server, with extra flags.
  std::unique_ptr<ServeProcess> StartServe(const std::string& name, std::vector<std::string> extra = {},
                                           const std::string& kubeconfig = "") {
    std::vector<std::string> args = {"--kubeconfig", kubeconfig.empty() ? server_->kubeconfig() : kubeconfig};
    for (auto& a : extra) args.push_back(a);
    return std::make_unique<ServeProcess>(name, server_->base(), args);
  }

  // Waits for /readyz 200; fails the test (with the log's tail) otherwise.
  static ::testing::AssertionResult WaitReady(ServeProcess& p, Seconds deadline = Seconds(60)) {
    if (Eventually([&] { return p.AdminGet("/readyz").status == 200 || !p.Running(); }, deadline) &&
        p.Running()) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "volcache serve not ready within " << deadline.count()
                                         << " s (running: " << p.Running() << "); log tail:\n"
                                         << Tail(p.Log());
  }

  static std::string Tail(const std::string& s, size_t n = 3000) {
    return s.size() <= n ? s : "..." + s.substr(s.size() - n);
  }

  // Every pod of `ns` that has a Binding in the audit log has exactly one, and every pod bound
  // on the server has one: nothing lost, nothing duplicated.
  // Pods in `created_bound` were created with spec.nodeName (no Binding).
  ::testing::AssertionResult BindingsExactlyOnce(const std::string& ns,
                                                 const std::set<std::string>& created_bound = {}) {
    KubeClient c = Admin();
    auto nodes = PodNodes(c, ns);
    auto audit = BindingsPerPod(ReadAudit(server_->audit_log()), ns);
    std::ostringstream bad;
    for (auto& [pod, n] : audit) {
      if (created_bound.count(pod.substr(ns.size() + 1)))
        bad << pod << " was created bound, yet got a Binding; ";
      if (n != 1) bad << pod << " has " << n << " successful Bindings; ";
    }
    for (auto& [name, node] : nodes) {
      const std::string key = ns + "/" + name;
      if (!node.empty() && !audit.count(key) && !created_bound.count(name))
        bad << key << " is bound to " << node << " but no Binding was audited; ";
    }
    if (bad.str().empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad.str();
  }

  static inline std::unique_ptr<KubeApiServer> server_;
  static inline std::string skip_;
  static inline std::string error_;
};

// Creates `count` pods of gang `group` (PodGroup with minMember `min`, or `count`) in `ns`.
inline std::string CreateGang(KubeClient& c, const std::string& ns, const std::string& group, int count,
                              const std::string& cpu, const std::string& memory,
                              const std::map<std::string, std::string>& selector,
                              const std::string& queue = "default", int min = -1) {
  auto a = c.Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups",
                  PodGroupJson(ns, group, min < 0 ? count : min, queue));
  if (a.status != 201)
    return "POST podgroup " + group + ": " + std::to_string(a.status) + " " + a.error + a.body;
  for (int i = 0; i < count; ++i) {
    const std::string name = group + "-" + std::to_string(i);
    a = c.Post("/api/v1/namespaces/" + ns + "/pods", PodJson(ns, name, group, cpu, memory, selector));
    if (a.status != 201) return "POST pod " + name + ": " + std::to_string(a.status) + " " + a.error + a.body;
  }
  return "";
}

// A serve log line without its timestamp ("[2026-11-24 15:55:17.403] "): searching the line
// for a status code such as "403" must not match the milliseconds.
inline std::string_view LogMessage(std::string_view line) {
  if (line.empty() || line[0] != '[') return line;
  const size_t close = line.find("] ");
  return close == std::string_view::npos ? line : line.substr(close + 2);
}

// Whether `message` contains `needle`, ignoring case. A needle that begins or ends with a digit
// must not continue a longer number there: "403" matches "HTTP 403:" but not the port in
// "127.0.0.1:44039".
inline bool MentionsWord(std::string_view message, std::string_view needle) {
  auto lower = [](char ch) { return static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); };
  auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (needle.empty() || needle.size() > message.size()) return false;
  for (size_t at = 0; at + needle.size() <= message.size(); ++at) {
    size_t i = 0;
    while (i < needle.size() && lower(message[at + i]) == lower(needle[i])) ++i;
    if (i != needle.size()) continue;
    if (digit(needle.front()) && at > 0 && digit(message[at - 1])) continue;
    const size_t end = at + needle.size();
    if (digit(needle.back()) && end < message.size() && digit(message[end])) continue;
    return true;
  }
  return false;
}

// The lines of `log`, from line `from` on, whose message (LogMessage) mentions any of `needles`
// (MentionsWord).
inline std::vector<std::string> LinesWith(const std::string& log, const std::vector<std::string>& needles,
                                          size_t from = 0) {
  std::vector<std::string> out;
  std::istringstream in(log);
  size_t i = 0;
  for (std::string line; std::getline(in, line);) {
    if (i++ < from) continue;
    const std::string_view message = LogMessage(line);
    if (std::any_of(needles.begin(), needles.end(),
                    [&](const std::string& n) { return MentionsWord(message, n); }))
      out.push_back(line);
  }
  return out;
}

}  // namespace volcache::integration
