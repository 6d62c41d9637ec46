#include "cmd/bind_flow_flags.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

namespace volcache::cmd {

BindFlowOptions BindFlowOptionsFromEnv(BindFlowOptions base, Status* error) {
  if (error != nullptr) *error = Status::Ok();
  const char* raw = std::getenv(kBatchBindNumEnv);
  if (raw == nullptr || *raw == '\0') return base;
  std::string_view digits(raw);
  if (digits.front() == '+') digits.remove_prefix(1);
  size_t n = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, n);
  if (digits.empty() || ec != std::errc() || ptr != end || n == 0) {
    if (error != nullptr) {
      *error = Status::InvalidArgument(std::string(kBatchBindNumEnv) + "=\"" + raw +
                                       "\": want a positive integer; keeping batch size " +
                                       std::to_string(base.batch_size));
    }
    return base;
  }
  base.batch_size = n;
  return base;
}

void AddBindFlowFlags(CLI::App& sub, BindFlowFlags* f, bool with_channel_capacity) {
  sub.add_option("--batch-bind-num", f->batch_bind_num,
                 "tasks per Binder::Bind call (default: $BATCH_BIND_NUM, else 1)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--max-concurrent-binds", f->max_concurrent_binds, "binds in flight at once (default 256)")
      ->check(CLI::PositiveNumber);
  if (with_channel_capacity) {
    sub.add_option("--bind-channel-capacity", f->channel_capacity, "BindFlowChannel capacity (default 5000)")
        ->check(CLI::PositiveNumber);
  }
}

Status ApplyBindFlowFlags(const BindFlowFlags& f, BindFlowOptions* options) {
  Status env;
  BindFlowOptions o = BindFlowOptionsFromEnv(*options, &env);
  if (!env.ok()) return env;
  if (f.batch_bind_num > 0) o.batch_size = static_cast<size_t>(f.batch_bind_num);
  if (f.max_concurrent_binds > 0) o.max_concurrent_binds = static_cast<size_t>(f.max_concurrent_binds);
  if (f.channel_capacity > 0) o.channel_capacity = static_cast<size_t>(f.channel_capacity);
  *options = o;
  return Status::Ok();
}

}  // namespace volcache::cmd
