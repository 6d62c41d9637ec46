#include "api/resource_list.h"

#include <limits>
#include <type_traits>

#include "api/k8s/objects.h"

namespace volcache {

static_assert(std::is_same_v<k8s::ResourceList, std::vector<std::pair<std::string, Quantity>>>,
              "ResourceFromList must accept k8s::ResourceList");

namespace {

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<int64_t>::max()
                                                     : std::numeric_limits<int64_t>::min();
  return r;
}

int32_t SatAddTaskNum(int32_t a, int64_t b) {
  const int64_t sum = SatAdd(a, b);
  if (sum > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (sum < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(sum);
}

}  // namespace

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
