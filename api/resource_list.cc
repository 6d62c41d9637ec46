#include "api/resource_list.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "api/k8s/objects.h"

namespace volcache {

static_assert(std::is_same_v<k8s::ResourceList, std::vector<std::pair<std::string, Quantity>>>,
              "ResourceFromList must accept k8s::ResourceList");

namespace {

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

int32_t SatAddTaskNum(int32_t a, int64_t b) {
  const int64_t sum = SatAdd(a, b);
  if (sum > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (sum < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(sum);
}

}  // namespace

// Kubernetes caps a quantity at 2^63-1 base units and silently saturates: the API server
// answers "999Ei" as 9223372036854775807. An amount that reaches 2^63-1 (base units, or
// milli-units for cpu and scalars) cannot be accounted exactly, so it is refused with the
// field named, instead of becoming a request of INT64_MAX.
static Status CheckRepresentable(const Quantity& q, std::string_view name, std::string_view field_path) {
  const ResourceKind kind = ClassifyResourceName(name);
  const bool milli = kind == ResourceKind::kCpu || kind == ResourceKind::kScalar;
  const int64_t v = milli ? q.MilliValue() : q.Value();
  if (!q.capped() && v != INT64_MAX) return Status::Ok();
  const std::string what = q.capped() ? std::string("is past") : q.ToDecimalString() + " reaches";
  return Status::InvalidArgument(
      fmt::format("{}.{}: quantity {} 2^63-1 {}, the API server's cap for amounts it cannot represent "
                  "(volcache refuses what it cannot account exactly)",
                  field_path, name, what, milli ? "milli-units" : "units"));
}

Result<Resource> ResourceFromList(const std::vector<std::pair<std::string, Quantity>>& list,
                                  std::string_view field_path) {
  Resource r;
  for (const auto& [name, quantity] : list) {
    if (quantity.negative()) {
      std::string msg(field_path);
      msg += '.';
      msg += name;
      msg += ": quantity must not be negative, got ";
      msg += quantity.ToDecimalString();
      return Status::InvalidArgument(std::move(msg));
    }
    if (Status s = CheckRepresentable(quantity, name, field_path); !s.ok()) return s;
    switch (ClassifyResourceName(name)) {
      case ResourceKind::kCpu:
        r.set_milli_cpu(SatAdd(r.milli_cpu(), quantity.MilliValue()));
        break;
      case ResourceKind::kMemory:
        r.set_memory(SatAdd(r.memory(), quantity.Value()));
        break;
      case ResourceKind::kPods:
        r.set_max_task_num(SatAddTaskNum(r.max_task_num(), quantity.Value()));
        r.AddScalar(ResourceNames::kPods, quantity.Value());
        break;
      case ResourceKind::kScalar:
        r.AddScalar(name, quantity.MilliValue());
        break;
      case ResourceKind::kIgnored:
        break;
    }
  }
  return r;
}

}  // namespace volcache
