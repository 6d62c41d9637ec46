#include "api/k8s/objects.h"

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace volcache::k8s {

namespace {

template <typename T>
constexpr std::string_view StaticKind() {
  if constexpr (std::is_same_v<T, Pod>) return "Pod";
  if constexpr (std::is_same_v<T, Node>) return "Node";
  if constexpr (std::is_same_v<T, PodGroup>) return "PodGroup";
  if constexpr (std::is_same_v<T, Queue>) return "Queue";
  if constexpr (std::is_same_v<T, PriorityClass>) return "PriorityClass";
  if constexpr (std::is_same_v<T, ResourceQuota>) return "ResourceQuota";
  if constexpr (std::is_same_v<T, HyperNode>) return "HyperNode";
  if constexpr (std::is_same_v<T, PersistentVolumeClaim>) return "PersistentVolumeClaim";
  if constexpr (std::is_same_v<T, PersistentVolume>) return "PersistentVolume";
  if constexpr (std::is_same_v<T, StorageClass>) return "StorageClass";
  return {};
}

const PodSpec::Rare& NoRare() {
  static const PodSpec::Rare empty;
  return empty;
}

const PodGroupSpec::Rare& NoGroupRare() {
  static const PodGroupSpec::Rare empty;
  return empty;
}

// The block to write: `rare`'s own, made or first copied when another holder shares it.
// use_count() == 1: no other spec holds the block, and none can start to while this one is
// being written (copying it would read this spec), so it may be changed in place.
template <class R>
R& WritableRare(boost::intrusive_ptr<const R>& rare) {
  if (!rare) {
    rare = new R();
  } else if (rare->use_count() > 1) {
    rare = new R(*rare);  // the copy's count starts afresh (intrusive_ref_counter)
  }
  return const_cast<R&>(*rare);
}

}  // namespace

const ResourceList& PodSpec::overhead() const { return (rare ? *rare : NoRare()).overhead; }
const std::vector<std::string>& PodSpec::pvc_names() const { return (rare ? *rare : NoRare()).pvc_names; }
const std::vector<std::string>& PodSpec::scheduling_gates() const {
  return (rare ? *rare : NoRare()).scheduling_gates;
}

const NodeAffinity& PodSpec::node_affinity() const { return (rare ? *rare : NoRare()).node_affinity; }
const PodAffinity& PodSpec::pod_affinity() const { return (rare ? *rare : NoRare()).pod_affinity; }
const PodAffinity& PodSpec::pod_anti_affinity() const { return (rare ? *rare : NoRare()).pod_anti_affinity; }
const std::vector<TopologySpreadConstraint>& PodSpec::topology_spread_constraints() const {
  return (rare ? *rare : NoRare()).topology_spread_constraints;
}

PodSpec::Rare& PodSpec::mutable_rare() { return WritableRare(rare); }

const Shared<std::map<std::string, int32_t, std::less<>>>& PodGroupSpec::min_task_member() const {
  return (rare ? *rare : NoGroupRare()).min_task_member;
}
const ResourceList& PodGroupSpec::min_resources() const {
  return (rare ? *rare : NoGroupRare()).min_resources;
}
const std::optional<NetworkTopologySpec>& PodGroupSpec::network_topology() const {
  return (rare ? *rare : NoGroupRare()).network_topology;
}
const std::vector<SubGroupPolicy>& PodGroupSpec::sub_group_policy() const {
  return (rare ? *rare : NoGroupRare()).sub_group_policy;
}
PodGroupSpec::Rare& PodGroupSpec::mutable_rare() { return WritableRare(rare); }

std::string_view KindOf(const Object& obj) {
  return std::visit(
      [](const auto& o) -> std::string_view {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, Unstructured>) {
          return o.kind;
        } else {
          return StaticKind<T>();
        }
      },
      obj);
}

const ObjectMeta& MetaOf(const Object& obj) {
  return std::visit([](const auto& o) -> const ObjectMeta& { return o.metadata; }, obj);
}

std::string ObjectKey(const ObjectMeta& meta) {
  return meta.namespace_.empty() ? meta.name.str() : meta.namespace_ + "/" + meta.name;
}

std::string DescribeObject(const Object& obj) {
  const ObjectMeta& meta = MetaOf(obj);
  std::string out(KindOf(obj));
  if (out.empty()) out = "object";
  out += ' ';
  if (!meta.namespace_.empty()) {
    out += meta.namespace_;
    out += '/';
  }
  out += meta.name.empty() ? std::string_view("<unknown>") : std::string_view(meta.name);
  return out;
}

std::string_view WatchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

bool LabelSelectorMatches(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [k, v] : selector.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    auto in_values = [&] {
      for (const auto& v : r.values) {
        if (v == it->second) return true;
      }
      return false;
    };
    if (r.op == "In") {
      if (!has || !in_values()) return false;
    } else if (r.op == "NotIn") {
      if (has && in_values()) return false;
    } else if (r.op == "Exists") {
      if (!has) return false;
    } else if (r.op == "DoesNotExist") {
      if (has) return false;
    } else {
      return false;  // the decoder refuses other operators
    }
  }
  return true;
}

std::string_view PodQosClass(const Pod& pod) {
  // Sums of positive cpu (0) and memory (1) quantities, in milli-units, and whether any was seen.
  struct Sum {
    bool seen = false;
    int64_t milli = 0;
  };
  Sum requests[2], limits[2];
  bool guaranteed = true;
  auto index = [](std::string_view name) { return name == "cpu" ? 0 : name == "memory" ? 1 : -1; };
  auto add = [&](const ResourceList& list, Sum* sums, bool* found) {
    for (const auto& [name, q] : list) {
      const int i = index(name);
      if (i < 0 || q.IsZero() || q.negative()) continue;
      sums[i].seen = true;
      sums[i].milli += q.MilliValue();
      if (found != nullptr) found[i] = true;
    }
  };
  for (const auto* containers : {&pod.spec.containers.get(), &pod.spec.init_containers.get()}) {
    for (const Container& c : *containers) {
      add(c.requests, requests, nullptr);
      bool found[2] = {false, false};
      add(c.limits, limits, found);
      if (!found[0] || !found[1]) guaranteed = false;
    }
  }
  const int request_count = int{requests[0].seen} + int{requests[1].seen};
  const int limit_count = int{limits[0].seen} + int{limits[1].seen};
  if (request_count == 0 && limit_count == 0) return "BestEffort";
  for (int i = 0; guaranteed && i < 2; ++i) {
    if (requests[i].seen && (!limits[i].seen || limits[i].milli != requests[i].milli)) guaranteed = false;
  }
  return guaranteed && request_count == limit_count ? "Guaranteed" : "Burstable";
}

}  // namespace volcache::k8s
