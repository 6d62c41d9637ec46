#pragma once
// Conversion from a Kubernetes ResourceList (requests, limits, overhead, allocatable) to a
// Resource, with Volcano's NewResource rules:
//   cpu                 → milli_cpu (MilliValue, rounded up)
//   memory              → memory in bytes (Value, rounded up)
//   pods                → max_task_num = Value and scalar "pods" = Value (a count)
//   ephemeral-storage, hugepages-*, attachable-volumes-*, and names containing '/'
//   (extended and kubernetes.io/ resources)   → scalar in milli-units (MilliValue)
//   count/*, requests.*, limits.* and any other name → ignored
// Repeated names add up. A negative quantity (under any name) is InvalidArgument naming
// `<field_path>.<name>` and the value; nothing is returned then.
//
// Thread-safety: pure function (interns names through the thread-safe ResourceNames).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/quantity.h"
#include "api/resource.h"
#include "api/status.h"

namespace volcache {

// `list` is a k8s::ResourceList (api/k8s/objects.h); spelled out here to keep this header
// light. `field_path` prefixes error messages, e.g. "spec.containers[0].resources.requests".
Result<Resource> ResourceFromList(const std::vector<std::pair<std::string, Quantity>>& list,
                                  std::string_view field_path);

}  // namespace volcache
