#include "api/placement.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <string>

namespace volcache::placement {

namespace {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool InValues(const std::vector<std::string>& values, std::string_view v) {
  for (const std::string& x : values) {
    if (x == v) return true;
  }
  return false;
}

// `op` over a value that is present (`has`) or not.
bool OperatorHolds(const k8s::NodeSelectorRequirement& r, bool has, std::string_view value) {
  if (r.op == "In") return has && InValues(r.values, value);
  if (r.op == "NotIn") return !has || !InValues(r.values, value);
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t have = 0, want = 0;
    if (!has || r.values.size() != 1 || !ParseInt64(value, &have) || !ParseInt64(r.values[0], &want))
      return false;
    return r.op == "Gt" ? have > want : have < want;
  }
  return false;  // the decoders refuse other operators
}

}  // namespace

bool RequirementMatches(const k8s::NodeSelectorRequirement& r, const k8s::StringMap& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  return OperatorHolds(r, has, has ? std::string_view(it->second) : std::string_view());
}

bool FieldRequirementMatches(const k8s::NodeSelectorRequirement& r, std::string_view node_name) {
  if (r.key != "metadata.name") return false;
  return OperatorHolds(r, true, node_name);
}

bool NodeSelectorTermMatches(const k8s::NodeSelectorTerm& term, const k8s::Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const auto& r : term.match_expressions) {
    if (!RequirementMatches(r, node.metadata.labels)) return false;
  }
  for (const auto& r : term.match_fields) {
    if (!FieldRequirementMatches(r, node.metadata.name)) return false;
  }
  return true;
}

bool NodeSelectorTermsMatch(const std::vector<k8s::NodeSelectorTerm>& terms, const k8s::Node& node) {
  for (const auto& t : terms) {
    if (NodeSelectorTermMatches(t, node)) return true;
  }
  return false;
}

bool MatchesNodeAffinity(const k8s::PodSpec& spec, const k8s::Node& node) {
  for (const auto& [k, v] : spec.node_selector) {
    auto it = node.metadata.labels.find(k);
    if (it == node.metadata.labels.end() || it->second != v) return false;
  }
  const auto& required = spec.node_affinity().required;
  return !required || NodeSelectorTermsMatch(*required, node);
}

int64_t PreferredNodeAffinityWeight(const k8s::PodSpec& spec, const k8s::Node& node) {
  int64_t sum = 0;
  for (const auto& p : spec.node_affinity().preferred) {
    if (p.weight != 0 && NodeSelectorTermMatches(p.preference, node)) sum += p.weight;
  }
  return sum;
}

bool Tolerates(const k8s::Toleration& t, std::string_view key, std::string_view value,
               std::string_view effect) {
  if (!t.effect.empty() && t.effect != effect) return false;
  const bool exists = t.operator_ == "Exists";
  if (t.key.empty()) return exists;  // an empty key with Exists tolerates every taint
  if (t.key != key) return false;
  return exists || t.value == value;
}

bool ToleratedBy(const std::vector<k8s::Toleration>& tolerations, std::string_view key,
                 std::string_view value, std::string_view effect) {
  for (const auto& t : tolerations) {
    if (Tolerates(t, key, value, effect)) return true;
  }
  return false;
}

const k8s::Taint* FirstUntoleratedTaint(const std::vector<k8s::Toleration>& tolerations,
                                        const k8s::Node& node) {
  for (const auto& taint : node.spec.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (!ToleratedBy(tolerations, taint.key, taint.value, taint.effect)) return &taint;
  }
  return nullptr;
}

int64_t IntolerablePreferNoScheduleTaints(const std::vector<k8s::Toleration>& tolerations,
                                          const k8s::Node& node) {
  int64_t n = 0;
  for (const auto& taint : node.spec.taints) {
    if (taint.effect == "PreferNoSchedule" && !ToleratedBy(tolerations, taint.key, taint.value, taint.effect))
      ++n;
  }
  return n;
}

std::vector<HostPort> WantedHostPorts(const k8s::PodSpec& spec) {
  std::vector<HostPort> out;
  AppendHostPorts(spec.containers, &out);
  return out;
}

bool HostPortsConflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.ip.empty() || b.ip.empty() || a.ip == b.ip;
}

bool TermSelectsNamespace(const k8s::PodAffinityTerm& term, std::string_view owner_namespace,
                          std::string_view pod_namespace) {
  if (term.namespaces.empty() && !term.namespace_selector) return pod_namespace == owner_namespace;
  if (InValues(term.namespaces, pod_namespace)) return true;
  if (!term.namespace_selector) return false;
  const k8s::StringMap ns_labels{{"kubernetes.io/metadata.name", std::string(pod_namespace)}};
  return k8s::LabelSelectorMatches(*term.namespace_selector, ns_labels);
}

bool TermMatchesPod(const k8s::PodAffinityTerm& term, std::string_view owner_namespace, const k8s::Pod& pod) {
  if (!term.label_selector) return false;
  if (!TermSelectsNamespace(term, owner_namespace, pod.metadata.namespace_)) return false;
  return k8s::LabelSelectorMatches(*term.label_selector, pod.metadata.labels);
}

bool SelectorMatches(const std::optional<k8s::LabelSelector>& selector, const k8s::StringMap& labels) {
  return selector && k8s::LabelSelectorMatches(*selector, labels);
}

namespace {

constexpr std::array<std::string_view, 4> kVolumeZoneLabels = {
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region"};

bool IsVolumeZoneLabel(std::string_view key) {
  for (std::string_view k : kVolumeZoneLabels) {
    if (k == key) return true;
  }
  return false;
}

// Whether `value` is one of the "__"-separated zones of `zones` (kube's LabelZonesToSet;
// blanks around each zone are trimmed).
bool ZonesHold(std::string_view zones, std::string_view value) {
  auto trim = [](std::string_view z) {
    while (!z.empty() && z.front() == ' ') z.remove_prefix(1);
    while (!z.empty() && z.back() == ' ') z.remove_suffix(1);
    return z;
  };
  size_t pos = 0;
  while (true) {
    const size_t end = zones.find("__", pos);
    std::string_view zone =
        trim(zones.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (!zone.empty() && zone == value) return true;
    if (end == std::string_view::npos) return false;
    pos = end + 2;
  }
}

}  // namespace

std::string ResolveClaims(const std::vector<std::string>& claims, const VolumeInfo& volumes,
                          std::vector<const k8s::PersistentVolume*>* bound) {
  bound->clear();
  for (const std::string& key : claims) {
    const std::string_view name = std::string_view(key).substr(key.find('/') + 1);
    auto c = volumes.claims.find(key);
    if (c == volumes.claims.end()) return fmt::format("persistentvolumeclaim \"{}\" not found", name);
    const k8s::PersistentVolumeClaim& pvc = *c->second;
    if (pvc.metadata.deletion_timestamp.has_value())
      return fmt::format("persistentvolumeclaim \"{}\" is being deleted", name);
    if (pvc.volume_name.empty()) {
      const std::string class_name = pvc.storage_class_name.value_or("");
      if (class_name.empty()) return std::string(kReasonUnboundImmediate);
      auto sc = volumes.classes.find(class_name);
      if (sc == volumes.classes.end())
        return fmt::format("storageclass.storage.k8s.io \"{}\" not found", class_name);
      if (sc->second->volume_binding_mode != "WaitForFirstConsumer")
        return std::string(kReasonUnboundImmediate);
      return fmt::format(
          "pod has unbound PersistentVolumeClaim \"{}\" of WaitForFirstConsumer class \"{}\" (volcache does "
          "not bind volumes)",
          name, class_name);
    }
    auto v = volumes.volumes.find(pvc.volume_name);
    if (v == volumes.volumes.end()) return std::string(kReasonPVNotExist);
    bound->push_back(v->second.get());
  }
  return "";
}

std::string_view VolumeNodeConflict(const std::vector<const k8s::PersistentVolume*>& bound,
                                    const k8s::Node& node) {
  for (const k8s::PersistentVolume* pv : bound) {
    if (pv->node_affinity.has_value() && !NodeSelectorTermsMatch(*pv->node_affinity, node))
      return kReasonVolumeNodeConflict;
  }
  bool node_has_zone = false;
  for (std::string_view k : kVolumeZoneLabels)
    node_has_zone = node_has_zone || node.metadata.labels.find(k) != node.metadata.labels.end();
  if (!node_has_zone) return {};
  for (const k8s::PersistentVolume* pv : bound) {
    for (const auto& [key, zones] : pv->metadata.labels) {
      if (!IsVolumeZoneLabel(key)) continue;
      auto it = node.metadata.labels.find(key);
      const std::string_view have =
          it != node.metadata.labels.end() ? std::string_view(it->second) : std::string_view();
      if (!ZonesHold(zones, have)) return kReasonVolumeZone;
    }
  }
  return {};
}

}  // namespace volcache::placement
