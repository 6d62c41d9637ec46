#include "evictor/evictor.h"

namespace volcache {

std::vector<k8s::PodCondition> EvictionConditions(const std::string& reason, k8s::TimeMs now_ms) {
  std::vector<k8s::PodCondition> out;
  out.push_back({"Ready", "False", "Evict", reason, now_ms});
  out.push_back({"DisruptionTarget", "True", "PreemptionByScheduler", reason, now_ms});
  return out;
}

}  // namespace volcache
