#pragma once
// Command-line flags for the admin server, shared by `volcache run` and `volcache serve`:
//   --listen HOST:PORT          (default 127.0.0.1:8080; port 0 = any free port)
//   --admin-token-file PATH     bearer token for every endpoint but /healthz and /readyz
//                               (or env VOLCACHE_ADMIN_TOKEN_FILE; a file keeps the token
//                               out of `ps` and shell history)
//   --admin-max-body-bytes N    larger request bodies get 413
//   --admin-threads N           requests served concurrently
// The token file is read while parsing (surrounding whitespace trimmed); an unreadable or
// empty file is a parse error naming the path.
// Thread-safety: call while building the CLI, before parsing.

namespace CLI {
class App;
}

namespace volcache {

struct AdminOptions;

void AddAdminFlags(CLI::App& app, AdminOptions* options);

}  // namespace volcache
