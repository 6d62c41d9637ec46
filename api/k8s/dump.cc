#include "api/k8s/dump.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace volcache::k8s {

namespace {

using json = nlohmann::json;

// Quantities by their exact value (equal quantities have equal canonical decimal text).
json J(const Quantity& q) { return q.ToDecimalString(); }
json J(const std::string& s) { return s; }
json J(bool b) { return b; }
json J(int32_t i) { return i; }
json J(int64_t i) { return i; }
json J(const StringMap& m) {
  json out = json::array();
  for (const auto& [k, v] : m) out.push_back(json::array({k, v}));
  return out;
}
json J(const ResourceList& list) {
  json out = json::array();  // in order: the order is part of the value
  for (const auto& [k, q] : list) out.push_back(json::array({k, J(q)}));
  return out;
}
// Declared first: the templates below call them for their elements.
json J(const OwnerReference& r);
json J(const ContainerPort& p);
json J(const Container& c);
json J(const Toleration& t);
json J(const PodCondition& c);
json J(const Taint& t);
json J(const NodeCondition& c);
json J(const ContainerImage& i);
json J(const PodGroupCondition& c);
json J(const LabelSelector& sel);
json J(const NodeSelectorRequirement& r);
json J(const NodeSelectorTerm& t);
json J(const PreferredSchedulingTerm& t);
json J(const PodAffinityTerm& t);
json J(const WeightedPodAffinityTerm& t);
json J(const TopologySpreadConstraint& t);

template <typename T>
json J(const std::optional<T>& o) {
  return o.has_value() ? json::array({J(*o)}) : json::array();
}
json J(OptionalInt64 o) { return o.has_value() ? json::array({*o}) : json::array(); }
json J(OptionalInt32 o) { return J(o.get()); }
template <typename T>
json J(const std::vector<T>& v) {
  json out = json::array();
  for (const T& e : v) out.push_back(J(e));
  return out;
}
template <typename T>
json J(const Shared<std::vector<T>>& v) {
  return J(v.get());
}

json J(const OwnerReference& r) {
  return {{"api_version", r.api_version},
          {"kind", r.kind},
          {"name", r.name},
          {"uid", r.uid},
          {"controller", r.controller}};
}

json J(const ObjectMeta& m) {
  return {{"name", m.name},
          {"namespace", m.namespace_},
          {"uid", m.uid},
          {"resource_version", m.resource_version},
          {"generation", m.generation()},
          {"creation_timestamp", m.creation_timestamp},
          {"deletion_timestamp", J(m.deletion_timestamp)},
          {"deletion_grace_period_seconds", J(m.deletion_grace_period_seconds())},
          {"labels", J(m.labels)},
          {"annotations", J(m.annotations)},
          {"owner_references", J(m.owner_references)}};
}

json J(const ContainerPort& p) {
  return {{"container_port", p.container_port},
          {"host_port", p.host_port},
          {"protocol", p.protocol},
          {"host_ip", p.host_ip}};
}

json J(const Container& c) {
  return {{"name", c.name},        {"image", c.image},    {"requests", J(c.requests)},
          {"limits", J(c.limits)}, {"ports", J(c.ports)}, {"restart_policy", c.restart_policy}};
}

json J(const Toleration& t) {
  return {{"key", t.key},
          {"operator", t.operator_},
          {"value", t.value},
          {"effect", t.effect},
          {"toleration_seconds", J(t.toleration_seconds)}};
}

json J(const PodCondition& c) {
  return {{"type", c.type},
          {"status", c.status},
          {"reason", c.reason},
          {"message", c.message},
          {"last_transition_time", c.last_transition_time}};
}

// A selector that may be null (matching nothing), as null or the selector.
json SelectorJson(const std::optional<LabelSelector>& sel) { return sel ? J(*sel) : json(nullptr); }

json J(const NodeSelectorRequirement& r) {
  return {{"key", r.key}, {"operator", r.op}, {"values", J(r.values)}};
}

json J(const NodeSelectorTerm& t) {
  return {{"match_expressions", J(t.match_expressions)}, {"match_fields", J(t.match_fields)}};
}

json J(const PreferredSchedulingTerm& t) { return {{"weight", t.weight}, {"preference", J(t.preference)}}; }

json J(const NodeAffinity& a) {
  // required: [] when absent, [terms] when present (present with no terms matches no node).
  return {{"required", a.required ? json::array({J(*a.required)}) : json::array()},
          {"preferred", J(a.preferred)}};
}

json J(const PodAffinityTerm& t) {
  return {{"label_selector", SelectorJson(t.label_selector)},
          {"namespaces", J(t.namespaces)},
          {"namespace_selector", SelectorJson(t.namespace_selector)},
          {"topology_key", t.topology_key}};
}

json J(const WeightedPodAffinityTerm& t) { return {{"weight", t.weight}, {"term", J(t.term)}}; }

json J(const PodAffinity& a) { return {{"required", J(a.required)}, {"preferred", J(a.preferred)}}; }

json J(const TopologySpreadConstraint& t) {
  return {{"max_skew", t.max_skew},
          {"topology_key", t.topology_key},
          {"when_unsatisfiable", t.when_unsatisfiable},
          {"label_selector", SelectorJson(t.label_selector)},
          {"min_domains", J(t.min_domains)},
          {"node_affinity_policy", t.node_affinity_policy},
          {"node_taints_policy", t.node_taints_policy},
          {"match_label_keys", J(t.match_label_keys)}};
}

json J(const Pod& p) {
  const PodSpec& s = p.spec;
  const PodStatus& st = p.status;
  return {{"metadata", J(p.metadata)},
          {"spec",
           {{"node_name", s.node_name},
            {"scheduler_name", s.scheduler_name},
            {"priority", J(s.priority)},
            {"priority_class_name", s.priority_class_name},
            {"containers", J(s.containers)},
            {"init_containers", J(s.init_containers)},
            {"overhead", J(s.overhead())},
            {"node_selector", J(s.node_selector)},
            {"tolerations", J(s.tolerations)},
            {"has_node_affinity", bool{s.has_node_affinity}},
            {"has_pod_affinity", bool{s.has_pod_affinity}},
            {"has_pod_anti_affinity", bool{s.has_pod_anti_affinity}},
            {"node_affinity", J(s.node_affinity())},
            {"pod_affinity", J(s.pod_affinity())},
            {"pod_anti_affinity", J(s.pod_anti_affinity())},
            {"topology_spread_constraints", J(s.topology_spread_constraints())},
            {"pvc_names", J(s.pvc_names())},
            {"scheduling_gates", J(s.scheduling_gates())},
            {"host_network", bool{s.host_network}}}},
          {"status",
           {{"phase", st.phase},
            {"conditions", J(st.conditions)},
            {"nominated_node_name", st.nominated_node_name},
            {"qos_class", PodQosClass(p)},
            {"start_time", J(st.start_time)}}}};
}

json J(const Taint& t) { return {{"key", t.key}, {"value", t.value}, {"effect", t.effect}}; }
json J(const NodeCondition& c) {
  return {{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message}};
}
json J(const ContainerImage& i) { return {{"names", J(i.names)}, {"size_bytes", i.size_bytes}}; }

json J(const Node& n) {
  return {{"metadata", J(n.metadata)},
          {"spec", {{"unschedulable", n.spec.unschedulable}, {"taints", J(n.spec.taints)}}},
          {"status",
           {{"capacity", J(n.status.capacity)},
            {"allocatable", J(n.status.allocatable)},
            {"conditions", J(n.status.conditions)},
            {"images", J(n.status.images)}}}};
}

json J(const PodGroupCondition& c) {
  return {{"type", c.type},
          {"status", c.status},
          {"transition_id", c.transition_id},
          {"last_transition_time", c.last_transition_time},
          {"reason", c.reason},
          {"message", c.message}};
}

json J(const NetworkTopologySpec& t);

json TopologyJson(const std::optional<NetworkTopologySpec>& t) { return t ? J(*t) : json(nullptr); }

json SubGroupsJson(const std::vector<SubGroupPolicy>& groups) {
  json out = json::array();
  for (const auto& g : groups) {
    out.push_back({{"name", g.name},
                   {"sub_group_size", g.sub_group_size},
                   {"network_topology", TopologyJson(g.network_topology)},
                   {"label_selector", SelectorJson(g.label_selector)},
                   {"match_label_keys", J(g.match_label_keys)}});
  }
  return out;
}

json J(const PodGroup& pg) {
  json mtm = json::array();
  for (const auto& [k, v] : pg.spec.min_task_member()) mtm.push_back(json::array({k, v}));
  return {{"metadata", J(pg.metadata)},
          {"spec",
           {{"min_member", pg.spec.min_member},
            {"min_task_member", mtm},
            {"queue", pg.spec.queue},
            {"priority_class_name", pg.spec.priority_class_name},
            {"min_resources", J(pg.spec.min_resources())},
            {"network_topology", TopologyJson(pg.spec.network_topology())},
            {"sub_group_policy", SubGroupsJson(pg.spec.sub_group_policy())}}},
          {"status",
           {{"phase", pg.status.phase},
            {"conditions", J(pg.status.conditions.get())},
            {"running", pg.status.running},
            {"succeeded", pg.status.succeeded},
            {"failed", pg.status.failed}}}};
}

json J(const Queue& q) {
  return {{"metadata", J(q.metadata)},
          {"spec",
           {{"weight", q.spec.weight},
            {"capability", J(q.spec.capability)},
            {"reclaimable", J(q.spec.reclaimable)},
            {"deserved", J(q.spec.deserved)},
            {"guarantee", J(q.spec.guarantee)},
            {"parent", q.spec.parent}}},
          {"status",
           {{"state", q.status.state},
            {"allocated", J(q.status.allocated)},
            {"pending", q.status.pending},
            {"running", q.status.running},
            {"inqueue", q.status.inqueue},
            {"completed", q.status.completed},
            {"unknown", q.status.unknown}}}};
}

json J(const PriorityClass& pc) {
  return {{"metadata", J(pc.metadata)},
          {"value", pc.value},
          {"global_default", pc.global_default},
          {"preemption_policy", pc.preemption_policy}};
}

json J(const ResourceQuota& rq) {
  return {{"metadata", J(rq.metadata)},
          {"spec_hard", J(rq.spec_hard)},
          {"status_hard", J(rq.status_hard)},
          {"status_used", J(rq.status_used)}};
}

json J(const LabelSelector& sel) {
  json exprs = json::array();
  for (const auto& r : sel.match_expressions) {
    exprs.push_back({{"key", r.key}, {"operator", r.op}, {"values", J(r.values)}});
  }
  return {{"match_labels", J(sel.match_labels)}, {"match_expressions", exprs}};
}

json J(const NetworkTopologySpec& t) {
  return {{"mode", t.mode},
          {"highest_tier_allowed", t.highest_tier_allowed ? json(*t.highest_tier_allowed) : json(nullptr)},
          {"highest_tier_name", t.highest_tier_name}};
}

json J(const HyperNode& hn) {
  json members = json::array();
  for (const auto& m : hn.spec.members) {
    members.push_back({{"type", static_cast<int>(m.type)},
                       {"selector", static_cast<int>(m.selector)},
                       {"name_or_pattern", m.name_or_pattern},
                       {"labels", J(m.labels)}});
  }
  return {{"metadata", J(hn.metadata)},
          {"spec", {{"tier", hn.spec.tier}, {"tier_name", hn.spec.tier_name}, {"members", members}}}};
}

json J(const PersistentVolumeClaim& pvc) {
  return {{"metadata", J(pvc.metadata)},
          {"volume_name", pvc.volume_name},
          {"storage_class_name", J(pvc.storage_class_name)},
          {"phase", pvc.phase}};
}

json J(const PersistentVolume& pv) {
  return {{"metadata", J(pv.metadata)},
          // [] when absent, [terms] when present (present with no terms matches no node).
          {"node_affinity", pv.node_affinity ? json::array({J(*pv.node_affinity)}) : json::array()},
          {"storage_class_name", pv.storage_class_name},
          {"phase", pv.phase}};
}

json J(const StorageClass& sc) {
  return {{"metadata", J(sc.metadata)},
          {"provisioner", sc.provisioner},
          {"volume_binding_mode", sc.volume_binding_mode}};
}

json J(const Unstructured& u) {
  return {{"api_version", u.api_version}, {"kind", u.kind}, {"metadata", J(u.metadata)}};
}

json J(const Object& obj) {
  return {{"variant", obj.index()},
          {"kind", std::string(KindOf(obj))},
          {"value", std::visit([](const auto& o) { return J(o); }, obj)}};
}

// Strings decoded from JSON are valid UTF-8; anything else must not throw out of a dump.
std::string Text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json J(const ApiStatus& s) {
  return {{"status", s.status}, {"message", s.message}, {"reason", s.reason}, {"code", s.code}};
}

template <typename T>
std::string DumpResult(const Result<T>& r) {
  if (!r.ok()) return "error " + std::string(StatusCodeName(r.status().code())) + ": " + r.status().message();
  return "ok " + CanonicalDump(*r);
}

}  // namespace

std::string CanonicalDump(const Object& obj) { return Text(J(obj)); }

std::string CanonicalDump(const ObjectList& list) {
  json items = json::array();
  for (const Object& o : list.items) items.push_back(J(o));
  return Text({{"kind", list.kind},
               {"resource_version", list.resource_version},
               {"continue", list.continue_token},
               {"items", items}});
}

std::string CanonicalDump(const WatchEvent& ev) {
  return Text({{"type", std::string(WatchEventTypeName(ev.type))},
               {"object", ev.object.has_value() ? json::array({J(*ev.object)}) : json::array()},
               {"error", J(ev.error)}});
}

std::string CanonicalDump(const Result<Object>& r) { return DumpResult(r); }
std::string CanonicalDump(const Result<ObjectList>& r) { return DumpResult(r); }
std::string CanonicalDump(const Result<WatchEvent>& r) { return DumpResult(r); }

}  // namespace volcache::k8s
