#include "server/admin_flags.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "server/admin_server.h"

namespace volcache {

namespace {

std::string Trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

}  // namespace

void AddAdminFlags(CLI::App& app, AdminOptions* options) {
  app.add_option("--listen", options->listen,
                 "admin HTTP address host:port (/metrics, /healthz, /readyz, /debug/*)")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--admin-token-file",
         [options](const std::string& path) {
           std::ifstream in(path);
           if (!in) throw CLI::ValidationError("--admin-token-file", "cannot read " + path);
           std::stringstream ss;
           ss << in.rdbuf();
           std::string token = Trim(ss.str());
           if (token.empty()) throw CLI::ValidationError("--admin-token-file", path + " is empty");
           options->bearer_token = std::move(token);
         },
         "file holding the bearer token the admin endpoints require (not /healthz, /readyz)")
      ->envname("VOLCACHE_ADMIN_TOKEN_FILE");
  app.add_option("--admin-max-body-bytes", options->max_body_bytes, "larger admin request bodies get 413")
      ->capture_default_str();
  app.add_option("--admin-threads", options->threads, "admin requests served concurrently")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

}  // namespace volcache
