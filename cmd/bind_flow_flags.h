#pragma once
// The bind-flow flags shared by `run`, `serve`, `replay` and `bench`:
//   --batch-bind-num N          tasks per Binder::Bind call (default: $BATCH_BIND_NUM, else 1)
//   --max-concurrent-binds N    binds in flight at once (default 256)
//   --bind-channel-capacity N   BindFlowChannel capacity (replay only; default 5000)
// The command layer is the one place that reads BATCH_BIND_NUM; the libraries take
// BindFlowOptions.
// Thread-safety: call while building the CLI / before starting the runtime.

#include "api/status.h"
#include "workers/bind_flow.h"

namespace CLI {
class App;
}

namespace volcache::cmd {

inline constexpr char kBatchBindNumEnv[] = "BATCH_BIND_NUM";

// `base` with batch_size taken from the BATCH_BIND_NUM environment variable when it is set
// to a positive decimal integer (an optional leading '+', as Go's strconv.Atoi). Unset or
// empty: `base` unchanged. Anything else (garbage, zero, negative, out of range): `base`
// unchanged and, when `error` is non-null, *error = InvalidArgument naming the variable and
// its value (OK otherwise).
BindFlowOptions BindFlowOptionsFromEnv(BindFlowOptions base, Status* error = nullptr);

struct BindFlowFlags {
  int batch_bind_num = 0;  // 0: not given
  int max_concurrent_binds = 0;
  int channel_capacity = 0;
};

void AddBindFlowFlags(CLI::App& sub, BindFlowFlags* flags, bool with_channel_capacity = false);
// $BATCH_BIND_NUM, then the flags given, over `options`. InvalidArgument (naming the
// variable and its value) for a malformed environment value; `options` unchanged then.
Status ApplyBindFlowFlags(const BindFlowFlags& flags, BindFlowOptions* options);

}  // namespace volcache::cmd
