#pragma once
// The bind-flow flags shared by `run`, `serve` and `replay`:
//   --batch-bind-num N          tasks per Binder::Bind call (default: $BATCH_BIND_NUM, else 1)
//   --max-concurrent-binds N    binds in flight at once (default 256)
//   --bind-channel-capacity N   BindFlowChannel capacity (replay only; default 5000)
// Thread-safety: call while building the CLI / before starting the runtime.

#include "api/status.h"
#include "workers/bind_flow.h"

namespace CLI {
class App;
}

namespace volcache::cmd {

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
