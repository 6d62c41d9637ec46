// The Kubernetes object decoder: JSON (nlohmann/json) and YAML (yaml-cpp, converted to the
// same JSON value model) into the object model of api/k8s/objects.h.
//
// Shape of the code: every value is decoded by a small Conv() overload that knows its own
// location (a Path chain of stack frames, rendered only when an error is reported, so the
// happy path allocates nothing for error reporting). A Ctx carries the object's kind,
// namespace and name so that every error reads `<Kind> <ns>/<name>: <field.path>: <problem>`.
// Library exceptions are caught at the public functions; nothing throws out of this file.

#include "api/k8s/decode.h"

#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/k8s/decode_fast.h"
#include "api/k8s/json_fwd.h"

namespace volcache::k8s {

namespace {

using json = nlohmann::json;

// ------------------------------------------------------------------- locations and errors

// One step of a field path. Paths live on the stack: a child refers to its parent frame,
// which outlives it. Rendering walks the chain only when an error is built.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;  // empty for the root
  size_t index = 0;
  bool is_index = false;

  Path Field(std::string_view k) const { return Path{this, k, 0, false}; }
  Path Index(size_t i) const { return Path{this, {}, i, true}; }

  std::string ToString() const {
    std::vector<const Path*> chain;
    for (const Path* p = this; p != nullptr; p = p->parent) {
      if (p->is_index || !p->key.empty()) chain.push_back(p);
    }
    std::string out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Path& p = **it;
      if (p.is_index) {
        out += fmt::format("[{}]", p.index);
      } else if (IsSimpleKey(p.key)) {
        if (!out.empty()) out += '.';
        out += p.key;
      } else {
        // Map keys such as `nvidia.com/gpu` would make a dotted path ambiguous; Kubernetes'
        // own field paths bracket them the same way.
        out += '[';
        out += p.key;
        out += ']';
      }
    }
    return out;
  }

  static bool IsSimpleKey(std::string_view k) {
    for (char ch : k) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '_' || ch == '-';
      if (!ok) return false;
    }
    return true;
  }
};

// Who is being decoded, for error messages. The views point into the JSON value being
// decoded (or into string literals), which outlive the Ctx.
struct Ctx {
  std::string_view kind;
  std::string_view ns;
  std::string_view name;

  std::string Describe() const {
    std::string out = kind.empty() ? std::string("object") : std::string(kind);
    out += ' ';
    if (!ns.empty()) {
      out += ns;
      out += '/';
    }
    if (name.empty()) {
      out += "<unknown>";
    } else {
      out += name;
    }
    return out;
  }

  Status Error(const Path& path, std::string_view problem) const {
    std::string msg = Describe();
    std::string where = path.ToString();
    if (!where.empty()) {
      msg += ": ";
      msg += where;
    }
    msg += ": ";
    msg += problem;
    return Status::InvalidArgument(std::move(msg));
  }
};

std::string TypeName(const json& v) {
  if (v.is_number_float()) return fmt::format("number {}", v.get<double>());
  if (v.is_number_unsigned()) return fmt::format("number {}", v.get<uint64_t>());
  if (v.is_number_integer()) return fmt::format("number {}", v.get<int64_t>());
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() <= 64) return fmt::format("string \"{}\"", s);
    return "string";
  }
  return v.type_name();
}

Status TypeError(const Ctx& c, const Path& p, std::string_view want, const json& v) {
  return c.Error(p, fmt::format("expected {}, got {}", want, TypeName(v)));
}

// The member `key` of object `obj`, or nullptr when it is absent or JSON null (the API
// server's clients treat both as "unset").
const json* Find(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// ----------------------------------------------------------------------- scalar values

Status Conv(const Ctx& c, const json& v, const Path& p, std::string* out) {
  if (!v.is_string()) return TypeError(c, p, "string", v);
  *out = v.get_ref<const std::string&>();
  return Status::Ok();
}

Status Conv(const Ctx& c, const json& v, const Path& p, bool* out) {
  if (!v.is_boolean()) return TypeError(c, p, "boolean", v);
  *out = v.get<bool>();
  return Status::Ok();
}

Status ConvInt(const Ctx& c, const json& v, const Path& p, int64_t lo, int64_t hi, std::string_view type,
               int64_t* out) {
  auto range_error = [&] { return c.Error(p, fmt::format("{} out of range for {}", TypeName(v), type)); };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return range_error();
    *out = static_cast<int64_t>(u);
    return Status::Ok();
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return range_error();
    *out = i;
    return Status::Ok();
  }
  if (v.is_number_float()) {
    // JSON writers (Python, jq) sometimes print whole numbers as 3.0; accept those exactly.
    const double d = v.get<double>();
    if (std::trunc(d) != d) return TypeError(c, p, "integer", v);
    if (d < static_cast<double>(lo) || d >= std::ldexp(static_cast<double>(hi / 2 + 1), 1)) {
      return range_error();
    }
    const auto i = static_cast<int64_t>(d);
    if (i < lo || i > hi) return range_error();
    *out = i;
    return Status::Ok();
  }
  return TypeError(c, p, "integer", v);
}

Status Conv(const Ctx& c, const json& v, const Path& p, int64_t* out) {
  return ConvInt(c, v, p, INT64_MIN, INT64_MAX, "int64", out);
}

Status Conv(const Ctx& c, const json& v, const Path& p, int32_t* out) {
  int64_t i = 0;
  VC_RETURN_IF_ERROR(ConvInt(c, v, p, INT32_MIN, INT32_MAX, "int32", &i));
  *out = static_cast<int32_t>(i);
  return Status::Ok();
}

Status Conv(const Ctx& c, const json& v, const Path& p, Quantity* out) {
  std::string buf;
  std::string_view text;
  if (v.is_string()) {
    text = v.get_ref<const std::string&>();
  } else if (v.is_number_unsigned()) {
    buf = std::to_string(v.get<uint64_t>());
    text = buf;
  } else if (v.is_number_integer()) {
    buf = std::to_string(v.get<int64_t>());
    text = buf;
  } else if (v.is_number_float()) {
    char tmp[64];
    const int n = std::snprintf(tmp, sizeof(tmp), "%.15g", v.get<double>());
    buf.assign(tmp, n > 0 ? static_cast<size_t>(n) : 0);
    text = buf;
  } else {
    return TypeError(c, p, "quantity (string or number)", v);
  }
  auto q = Quantity::Parse(text);
  if (!q.ok()) return c.Error(p, q.status().message());
  *out = std::move(q).value();
  return Status::Ok();
}

Status Conv(const Ctx& c, const json& v, const Path& p, StringMap* out) {
  if (!v.is_object()) return TypeError(c, p, "object", v);
  StringMap m;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string value;
    if (!it->is_null()) {
      const Path fp = p.Field(it.key());
      VC_RETURN_IF_ERROR(Conv(c, *it, fp, &value));
    }
    m.emplace_hint(m.end(), it.key(), std::move(value));
  }
  *out = std::move(m);
  return Status::Ok();
}

Status Conv(const Ctx& c, const json& v, const Path& p, ResourceList* out) {
  if (!v.is_object()) return TypeError(c, p, "object", v);
  ResourceList list;
  list.reserve(v.size());
  for (auto it = v.begin(); it != v.end(); ++it) {
    Quantity q;  // null decodes to zero, as Kubernetes' Quantity.UnmarshalJSON does
    if (!it->is_null()) {
      const Path fp = p.Field(it.key());
      VC_RETURN_IF_ERROR(Conv(c, *it, fp, &q));
    }
    list.emplace_back(it.key(), std::move(q));
  }
  *out = std::move(list);
  return Status::Ok();
}

template <typename T>
Status Conv(const Ctx& c, const json& v, const Path& p, std::optional<T>* out) {
  T value{};
  VC_RETURN_IF_ERROR(Conv(c, v, p, &value));
  *out = std::move(value);
  return Status::Ok();
}

// Reads member `key` into *out when it is present and not null; leaves *out alone otherwise.
template <typename T>
Status Get(const Ctx& c, const json& obj, const Path& p, std::string_view key, T* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  const Path fp = p.Field(key);
  return Conv(c, *v, fp, out);
}

Status ConvTime(const Ctx& c, const json& v, const Path& p, TimeMs* out) {
  if (!v.is_string()) return TypeError(c, p, "RFC 3339 timestamp string", v);
  auto t = ParseTimestamp(v.get_ref<const std::string&>());
  if (!t.ok()) return c.Error(p, t.status().message());
  *out = *t;
  return Status::Ok();
}

Status GetTime(const Ctx& c, const json& obj, const Path& p, std::string_view key, TimeMs* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  const Path fp = p.Field(key);
  return ConvTime(c, *v, fp, out);
}

Status GetTime(const Ctx& c, const json& obj, const Path& p, std::string_view key,
               std::optional<TimeMs>* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  const Path fp = p.Field(key);
  TimeMs t = 0;
  VC_RETURN_IF_ERROR(ConvTime(c, *v, fp, &t));
  *out = t;
  return Status::Ok();
}

// *out = the member when it is an object; nullptr when absent or null.
Status GetObject(const Ctx& c, const json& obj, const Path& p, std::string_view key, const json** out) {
  *out = nullptr;
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) return TypeError(c, p.Field(key), "object", *v);
  *out = v;
  return Status::Ok();
}

// Calls fn(element, path) for every element of the array member `key`, each of which must be
// an object. An absent or null member is an empty array.
template <typename Fn>
Status ForEachObject(const Ctx& c, const json& obj, const Path& p, std::string_view key, Fn&& fn) {
  const json* arr = Find(obj, key);
  if (arr == nullptr) return Status::Ok();
  const Path ap = p.Field(key);
  if (!arr->is_array()) return TypeError(c, ap, "array", *arr);
  for (size_t i = 0; i < arr->size(); ++i) {
    const Path ip = ap.Index(i);
    const json& e = (*arr)[i];
    if (!e.is_object()) return TypeError(c, ip, "object", e);
    VC_RETURN_IF_ERROR(fn(e, ip));
  }
  return Status::Ok();
}

// A view of a string member, for the identity fields read before full decoding.
std::string_view PeekString(const json& obj, std::string_view key) {
  const json* v = Find(obj, key);
  if (v == nullptr || !v->is_string()) return {};
  return v->get_ref<const std::string&>();
}

// ----------------------------------------------------------------------------- metadata

Status DecodeOwnerReference(const Ctx& c, const json& o, const Path& p, OwnerReference* ref) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "apiVersion", &ref->api_version));
  VC_RETURN_IF_ERROR(Get(c, o, p, "kind", &ref->kind));
  VC_RETURN_IF_ERROR(Get(c, o, p, "name", &ref->name));
  VC_RETURN_IF_ERROR(Get(c, o, p, "uid", &ref->uid));
  VC_RETURN_IF_ERROR(Get(c, o, p, "controller", &ref->controller));
  return Status::Ok();
}

Status DecodeMeta(const Ctx& c, const json& m, const Path& p, bool require_name, ObjectMeta* meta) {
  VC_RETURN_IF_ERROR(Get(c, m, p, "name", &meta->name));
  if (require_name && meta->name.empty()) return c.Error(p.Field("name"), "missing required field");
  VC_RETURN_IF_ERROR(Get(c, m, p, "namespace", &meta->namespace_));
  VC_RETURN_IF_ERROR(Get(c, m, p, "uid", &meta->uid));
  VC_RETURN_IF_ERROR(Get(c, m, p, "resourceVersion", &meta->resource_version));
  VC_RETURN_IF_ERROR(Get(c, m, p, "generation", &meta->generation));
  VC_RETURN_IF_ERROR(GetTime(c, m, p, "creationTimestamp", &meta->creation_timestamp));
  VC_RETURN_IF_ERROR(GetTime(c, m, p, "deletionTimestamp", &meta->deletion_timestamp));
  VC_RETURN_IF_ERROR(Get(c, m, p, "deletionGracePeriodSeconds", &meta->deletion_grace_period_seconds));
  VC_RETURN_IF_ERROR(Get(c, m, p, "labels", &meta->labels));
  VC_RETURN_IF_ERROR(Get(c, m, p, "annotations", &meta->annotations));
  return ForEachObject(c, m, p, "ownerReferences", [&](const json& o, const Path& op) {
    OwnerReference ref;
    VC_RETURN_IF_ERROR(DecodeOwnerReference(c, o, op, &ref));
    meta->owner_references.push_back(std::move(ref));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------- Pod

Status DecodeContainer(const Ctx& c, const json& o, const Path& p, bool init, Container* ct) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "name", &ct->name));
  VC_RETURN_IF_ERROR(Get(c, o, p, "image", &ct->image));
  const json* res = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, o, p, "resources", &res));
  if (res != nullptr) {
    const Path rp = p.Field("resources");
    VC_RETURN_IF_ERROR(Get(c, *res, rp, "requests", &ct->requests));
    VC_RETURN_IF_ERROR(Get(c, *res, rp, "limits", &ct->limits));
  }
  VC_RETURN_IF_ERROR(ForEachObject(c, o, p, "ports", [&](const json& po, const Path& pp) {
    ContainerPort port;
    VC_RETURN_IF_ERROR(Get(c, po, pp, "containerPort", &port.container_port));
    VC_RETURN_IF_ERROR(Get(c, po, pp, "hostPort", &port.host_port));
    VC_RETURN_IF_ERROR(Get(c, po, pp, "protocol", &port.protocol));
    if (port.protocol.empty()) port.protocol = "TCP";
    VC_RETURN_IF_ERROR(Get(c, po, pp, "hostIP", &port.host_ip));
    ct->ports.push_back(std::move(port));
    return Status::Ok();
  }));
  if (init) VC_RETURN_IF_ERROR(Get(c, o, p, "restartPolicy", &ct->restart_policy));
  return Status::Ok();
}

Status DecodeContainers(const Ctx& c, const json& spec, const Path& p, std::string_view key, bool init,
                        std::vector<Container>* out) {
  return ForEachObject(c, spec, p, key, [&](const json& o, const Path& cp) {
    Container ct;
    VC_RETURN_IF_ERROR(DecodeContainer(c, o, cp, init, &ct));
    out->push_back(std::move(ct));
    return Status::Ok();
  });
}

Status DecodePodSpec(const Ctx& c, const json& s, const Path& p, PodSpec* spec) {
  VC_RETURN_IF_ERROR(Get(c, s, p, "nodeName", &spec->node_name));
  VC_RETURN_IF_ERROR(Get(c, s, p, "schedulerName", &spec->scheduler_name));  // defaulted by the caller
  VC_RETURN_IF_ERROR(Get(c, s, p, "priority", &spec->priority));
  VC_RETURN_IF_ERROR(Get(c, s, p, "priorityClassName", &spec->priority_class_name));
  VC_RETURN_IF_ERROR(DecodeContainers(c, s, p, "containers", false, &spec->containers));
  VC_RETURN_IF_ERROR(DecodeContainers(c, s, p, "initContainers", true, &spec->init_containers));
  VC_RETURN_IF_ERROR(Get(c, s, p, "overhead", &spec->overhead));
  VC_RETURN_IF_ERROR(Get(c, s, p, "nodeSelector", &spec->node_selector));
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "tolerations", [&](const json& o, const Path& tp) {
    Toleration t;
    VC_RETURN_IF_ERROR(Get(c, o, tp, "key", &t.key));
    VC_RETURN_IF_ERROR(Get(c, o, tp, "operator", &t.operator_));
    if (t.operator_.empty()) t.operator_ = "Equal";
    VC_RETURN_IF_ERROR(Get(c, o, tp, "value", &t.value));
    VC_RETURN_IF_ERROR(Get(c, o, tp, "effect", &t.effect));
    VC_RETURN_IF_ERROR(Get(c, o, tp, "tolerationSeconds", &t.toleration_seconds));
    spec->tolerations.push_back(std::move(t));
    return Status::Ok();
  }));
  const json* affinity = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, s, p, "affinity", &affinity));
  if (affinity != nullptr) {
    const Path ap = p.Field("affinity");
    const json* sub = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "nodeAffinity", &sub));
    spec->has_node_affinity = sub != nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "podAffinity", &sub));
    spec->has_pod_affinity = sub != nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "podAntiAffinity", &sub));
    spec->has_pod_anti_affinity = sub != nullptr;
  }
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "volumes", [&](const json& o, const Path& vp) {
    const json* pvc = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, o, vp, "persistentVolumeClaim", &pvc));
    if (pvc == nullptr) return Status::Ok();
    std::string claim;
    VC_RETURN_IF_ERROR(Get(c, *pvc, vp.Field("persistentVolumeClaim"), "claimName", &claim));
    if (!claim.empty()) spec->pvc_names.push_back(std::move(claim));
    return Status::Ok();
  }));
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "schedulingGates", [&](const json& o, const Path& gp) {
    std::string name;
    VC_RETURN_IF_ERROR(Get(c, o, gp, "name", &name));
    spec->scheduling_gates.push_back(std::move(name));
    return Status::Ok();
  }));
  return Get(c, s, p, "hostNetwork", &spec->host_network);
}

Status DecodePodStatus(const Ctx& c, const json& s, const Path& p, PodStatus* st) {
  VC_RETURN_IF_ERROR(Get(c, s, p, "phase", &st->phase));
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "conditions", [&](const json& o, const Path& cp) {
    PodCondition cond;
    VC_RETURN_IF_ERROR(Get(c, o, cp, "type", &cond.type));
    VC_RETURN_IF_ERROR(Get(c, o, cp, "status", &cond.status));
    VC_RETURN_IF_ERROR(Get(c, o, cp, "reason", &cond.reason));
    VC_RETURN_IF_ERROR(Get(c, o, cp, "message", &cond.message));
    VC_RETURN_IF_ERROR(GetTime(c, o, cp, "lastTransitionTime", &cond.last_transition_time));
    st->conditions.push_back(std::move(cond));
    return Status::Ok();
  }));
  VC_RETURN_IF_ERROR(Get(c, s, p, "nominatedNodeName", &st->nominated_node_name));
  VC_RETURN_IF_ERROR(Get(c, s, p, "qosClass", &st->qos_class));
  return GetTime(c, s, p, "startTime", &st->start_time);
}

// Decodes `spec` and `status` of an object whose metadata is already decoded.
template <typename SpecFn, typename StatusFn>
Status DecodeSpecAndStatus(const Ctx& c, const json& j, SpecFn&& spec_fn, StatusFn&& status_fn) {
  const Path root;
  const json* spec = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, j, root, "spec", &spec));
  if (spec != nullptr) VC_RETURN_IF_ERROR(spec_fn(*spec, root.Field("spec")));
  const json* status = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, j, root, "status", &status));
  if (status != nullptr) VC_RETURN_IF_ERROR(status_fn(*status, root.Field("status")));
  return Status::Ok();
}

Status DecodePodBody(const Ctx& c, const json& j, Pod* pod) {
  VC_RETURN_IF_ERROR(DecodeSpecAndStatus(
      c, j, [&](const json& s, const Path& p) { return DecodePodSpec(c, s, p, &pod->spec); },
      [&](const json& s, const Path& p) { return DecodePodStatus(c, s, p, &pod->status); }));
  if (pod->spec.scheduler_name.empty()) pod->spec.scheduler_name = "default-scheduler";
  return Status::Ok();
}

// --------------------------------------------------------------------------------- Node

Status DecodeNodeBody(const Ctx& c, const json& j, Node* node) {
  // A Node without a spec still defaults its fields.
  return DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        VC_RETURN_IF_ERROR(Get(c, s, p, "unschedulable", &node->spec.unschedulable));
        return ForEachObject(c, s, p, "taints", [&](const json& o, const Path& tp) {
          Taint t;
          VC_RETURN_IF_ERROR(Get(c, o, tp, "key", &t.key));
          VC_RETURN_IF_ERROR(Get(c, o, tp, "value", &t.value));
          VC_RETURN_IF_ERROR(Get(c, o, tp, "effect", &t.effect));
          node->spec.taints.push_back(std::move(t));
          return Status::Ok();
        });
      },
      [&](const json& s, const Path& p) {
        NodeStatus& st = node->status;
        VC_RETURN_IF_ERROR(Get(c, s, p, "capacity", &st.capacity));
        VC_RETURN_IF_ERROR(Get(c, s, p, "allocatable", &st.allocatable));
        VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "conditions", [&](const json& o, const Path& cp) {
          NodeCondition cond;
          VC_RETURN_IF_ERROR(Get(c, o, cp, "type", &cond.type));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "status", &cond.status));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "reason", &cond.reason));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "message", &cond.message));
          st.conditions.push_back(std::move(cond));
          return Status::Ok();
        }));
        return ForEachObject(c, s, p, "images", [&](const json& o, const Path& ip) {
          ContainerImage image;
          const json* names = Find(o, "names");
          if (names != nullptr) {
            const Path np = ip.Field("names");
            if (!names->is_array()) return TypeError(c, np, "array", *names);
            for (size_t i = 0; i < names->size(); ++i) {
              std::string name;
              VC_RETURN_IF_ERROR(Conv(c, (*names)[i], np.Index(i), &name));
              image.names.push_back(std::move(name));
            }
          }
          VC_RETURN_IF_ERROR(Get(c, o, ip, "sizeBytes", &image.size_bytes));
          st.images.push_back(std::move(image));
          return Status::Ok();
        });
      });
}

// ----------------------------------------------------------------------------- PodGroup

Status DecodePodGroupBody(const Ctx& c, const json& j, PodGroup* pg) {
  return DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        PodGroupSpec& spec = pg->spec;
        VC_RETURN_IF_ERROR(Get(c, s, p, "minMember", &spec.min_member));
        const json* mtm = nullptr;
        VC_RETURN_IF_ERROR(GetObject(c, s, p, "minTaskMember", &mtm));
        if (mtm != nullptr) {
          const Path mp = p.Field("minTaskMember");
          for (auto it = mtm->begin(); it != mtm->end(); ++it) {
            int32_t n = 0;
            if (!it->is_null()) VC_RETURN_IF_ERROR(Conv(c, *it, mp.Field(it.key()), &n));
            spec.min_task_member.emplace(it.key(), n);
          }
        }
        VC_RETURN_IF_ERROR(Get(c, s, p, "queue", &spec.queue));
        VC_RETURN_IF_ERROR(Get(c, s, p, "priorityClassName", &spec.priority_class_name));
        return Get(c, s, p, "minResources", &spec.min_resources);
      },
      [&](const json& s, const Path& p) {
        PodGroupStatus& st = pg->status;
        VC_RETURN_IF_ERROR(Get(c, s, p, "phase", &st.phase));
        VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "conditions", [&](const json& o, const Path& cp) {
          PodGroupCondition cond;
          VC_RETURN_IF_ERROR(Get(c, o, cp, "type", &cond.type));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "status", &cond.status));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "transitionID", &cond.transition_id));
          VC_RETURN_IF_ERROR(GetTime(c, o, cp, "lastTransitionTime", &cond.last_transition_time));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "reason", &cond.reason));
          VC_RETURN_IF_ERROR(Get(c, o, cp, "message", &cond.message));
          st.conditions.push_back(std::move(cond));
          return Status::Ok();
        }));
        VC_RETURN_IF_ERROR(Get(c, s, p, "running", &st.running));
        VC_RETURN_IF_ERROR(Get(c, s, p, "succeeded", &st.succeeded));
        return Get(c, s, p, "failed", &st.failed);
      });
}

// -------------------------------------------------------------------------------- Queue

Status DecodeQueueBody(const Ctx& c, const json& j, Queue* q) {
  return DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        QueueSpec& spec = q->spec;
        VC_RETURN_IF_ERROR(Get(c, s, p, "weight", &spec.weight));
        VC_RETURN_IF_ERROR(Get(c, s, p, "capability", &spec.capability));
        VC_RETURN_IF_ERROR(Get(c, s, p, "reclaimable", &spec.reclaimable));
        VC_RETURN_IF_ERROR(Get(c, s, p, "deserved", &spec.deserved));
        // The CRD defines only guarantee.resource; the API server prunes any other key, so
        // manifests that put resources directly under guarantee are read as having none.
        const json* guarantee = nullptr;
        VC_RETURN_IF_ERROR(GetObject(c, s, p, "guarantee", &guarantee));
        if (guarantee != nullptr) {
          VC_RETURN_IF_ERROR(Get(c, *guarantee, p.Field("guarantee"), "resource", &spec.guarantee));
        }
        return Get(c, s, p, "parent", &spec.parent);
      },
      [&](const json& s, const Path& p) {
        QueueStatus& st = q->status;
        VC_RETURN_IF_ERROR(Get(c, s, p, "state", &st.state));
        VC_RETURN_IF_ERROR(Get(c, s, p, "allocated", &st.allocated));
        VC_RETURN_IF_ERROR(Get(c, s, p, "pending", &st.pending));
        VC_RETURN_IF_ERROR(Get(c, s, p, "running", &st.running));
        VC_RETURN_IF_ERROR(Get(c, s, p, "inqueue", &st.inqueue));
        VC_RETURN_IF_ERROR(Get(c, s, p, "completed", &st.completed));
        return Get(c, s, p, "unknown", &st.unknown);
      });
}

// ----------------------------------------------------------- PriorityClass, ResourceQuota

Status DecodePriorityClassBody(const Ctx& c, const json& j, PriorityClass* pc) {
  const Path root;
  VC_RETURN_IF_ERROR(Get(c, j, root, "value", &pc->value));
  VC_RETURN_IF_ERROR(Get(c, j, root, "globalDefault", &pc->global_default));
  return Get(c, j, root, "preemptionPolicy", &pc->preemption_policy);
}

Status DecodeResourceQuotaBody(const Ctx& c, const json& j, ResourceQuota* rq) {
  return DecodeSpecAndStatus(
      c, j, [&](const json& s, const Path& p) { return Get(c, s, p, "hard", &rq->spec_hard); },
      [&](const json& s, const Path& p) {
        VC_RETURN_IF_ERROR(Get(c, s, p, "hard", &rq->status_hard));
        return Get(c, s, p, "used", &rq->status_used);
      });
}

// ----------------------------------------------------------------------------- dispatch

enum class KindId : uint8_t { kPod, kNode, kPodGroup, kQueue, kPriorityClass, kResourceQuota, kOther };

// Picks the typed decoder from (group, kind). A kind we model but from another API group (a
// different CRD that happens to be called Queue) is Unstructured; a known group with a
// version we do not speak is an error rather than a silently ignored object.
Result<KindId> Classify(const Ctx& c, std::string_view api_version, std::string_view kind) {
  std::string_view group;
  std::string_view version = api_version;
  if (auto slash = api_version.find('/'); slash != std::string_view::npos) {
    group = api_version.substr(0, slash);
    version = api_version.substr(slash + 1);
  }
  struct Known {
    std::string_view kind;
    std::string_view group;
    std::string_view versions[3];  // empty entries are unused
    KindId id;
  };
  static const Known kKnown[] = {
      {"Pod", "", {"v1"}, KindId::kPod},
      {"Node", "", {"v1"}, KindId::kNode},
      {"ResourceQuota", "", {"v1"}, KindId::kResourceQuota},
      {"PriorityClass", "scheduling.k8s.io", {"v1", "v1beta1", "v1alpha1"}, KindId::kPriorityClass},
      {"PodGroup", "scheduling.volcano.sh", {"v1beta1", "v1alpha1", "v1alpha2"}, KindId::kPodGroup},
      {"Queue", "scheduling.volcano.sh", {"v1beta1", "v1alpha1", "v1alpha2"}, KindId::kQueue},
  };
  for (const Known& k : kKnown) {
    if (kind != k.kind) continue;
    if (api_version.empty()) return k.id;  // a List item that inherits nothing: trust the kind
    if (group != k.group) return KindId::kOther;
    bool known_version = false;
    for (std::string_view v : k.versions) known_version = known_version || (!v.empty() && v == version);
    if (!known_version) {
      return c.Error(
          Path().Field("apiVersion"),
          fmt::format("unsupported version \"{}\" for {} (group \"{}\")", api_version, kind, k.group));
    }
    return k.id;
  }
  return KindId::kOther;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A `*List` object: kind ends in List and it carries an items array.
bool LooksLikeList(const json& j) {
  if (!j.is_object()) return false;
  const std::string_view kind = PeekString(j, "kind");
  if (!EndsWith(kind, "List")) return false;
  auto it = j.find("items");
  return it != j.end() && (it->is_array() || it->is_null());
}

struct DecodeOptions {
  // For List items that omit kind/apiVersion (the API server's lists do).
  std::string_view default_kind;
  std::string_view default_api_version;
  // Watch bookmarks: the object carries only metadata.resourceVersion. Decoded as
  // Unstructured, with no name or apiVersion required.
  bool bookmark = false;
};

Status NotAnObject(const json& j) {
  return Status::InvalidArgument(fmt::format("document is not an object (got {})", TypeName(j)));
}

template <typename T, typename BodyFn>
Result<Object> DecodeTyped(const Ctx& c, const json& j, const json& meta, BodyFn&& body) {
  T obj;
  VC_RETURN_IF_ERROR(DecodeMeta(c, meta, Path().Field("metadata"), /*require_name=*/true, &obj.metadata));
  VC_RETURN_IF_ERROR(body(c, j, &obj));
  return Object(std::move(obj));
}

Result<Object> DecodeValue(const json& j, const DecodeOptions& opt) {
  if (!j.is_object()) return NotAnObject(j);
  const Path root;
  Ctx c;
  const json* meta = Find(j, "metadata");
  if (meta != nullptr && meta->is_object()) {
    c.ns = PeekString(*meta, "namespace");
    c.name = PeekString(*meta, "name");
  }

  std::string_view kind = opt.default_kind;
  if (const json* k = Find(j, "kind")) {
    if (!k->is_string()) return TypeError(c, root.Field("kind"), "string", *k);
    if (!k->get_ref<const std::string&>().empty()) kind = k->get_ref<const std::string&>();
  }
  std::string_view api_version = opt.default_api_version;
  if (const json* a = Find(j, "apiVersion")) {
    if (!a->is_string()) return TypeError(c, root.Field("apiVersion"), "string", *a);
    if (!a->get_ref<const std::string&>().empty()) api_version = a->get_ref<const std::string&>();
  }
  c.kind = kind;

  if (opt.bookmark) {
    Unstructured u;
    u.kind = std::string(kind);
    u.api_version = std::string(api_version);
    if (meta != nullptr) {
      if (!meta->is_object()) return TypeError(c, root.Field("metadata"), "object", *meta);
      VC_RETURN_IF_ERROR(DecodeMeta(c, *meta, root.Field("metadata"), /*require_name=*/false, &u.metadata));
    }
    return Object(std::move(u));
  }

  if (kind.empty()) return c.Error(root.Field("kind"), "missing required field");
  if (LooksLikeList(j)) {
    return c.Error(root.Field("kind"), fmt::format("{} is a list; decode it with DecodeList", kind));
  }
  if (meta == nullptr) return c.Error(root.Field("metadata"), "missing required field");
  if (!meta->is_object()) return TypeError(c, root.Field("metadata"), "object", *meta);

  auto id = Classify(c, api_version, kind);
  if (!id.ok()) return id.status();
  switch (*id) {
    case KindId::kPod:
      c.kind = "Pod";
      return DecodeTyped<Pod>(c, j, *meta, DecodePodBody);
    case KindId::kNode:
      c.kind = "Node";
      return DecodeTyped<Node>(c, j, *meta, DecodeNodeBody);
    case KindId::kPodGroup:
      c.kind = "PodGroup";
      return DecodeTyped<PodGroup>(c, j, *meta, DecodePodGroupBody);
    case KindId::kQueue:
      c.kind = "Queue";
      return DecodeTyped<Queue>(c, j, *meta, DecodeQueueBody);
    case KindId::kPriorityClass:
      c.kind = "PriorityClass";
      return DecodeTyped<PriorityClass>(c, j, *meta, DecodePriorityClassBody);
    case KindId::kResourceQuota:
      c.kind = "ResourceQuota";
      return DecodeTyped<ResourceQuota>(c, j, *meta, DecodeResourceQuotaBody);
    case KindId::kOther:
      break;
  }
  if (api_version.empty()) return c.Error(root.Field("apiVersion"), "missing required field");
  Unstructured u;
  u.kind = std::string(kind);
  u.api_version = std::string(api_version);
  VC_RETURN_IF_ERROR(DecodeMeta(c, *meta, root.Field("metadata"), /*require_name=*/true, &u.metadata));
  return Object(std::move(u));
}

Result<ObjectList> DecodeListValue(const json& j) {
  if (!j.is_object()) return NotAnObject(j);
  const Path root;
  Ctx c;
  const json* k = Find(j, "kind");
  if (k == nullptr) return c.Error(root.Field("kind"), "missing required field");
  if (!k->is_string()) return TypeError(c, root.Field("kind"), "string", *k);
  const std::string& kind = k->get_ref<const std::string&>();
  c.kind = kind;
  if (!EndsWith(kind, "List")) return c.Error(root.Field("kind"), fmt::format("{} is not a List kind", kind));

  // Lists have no name; say "PodList" rather than "PodList <unknown>".
  auto list_error = [&](const Path& p, std::string_view problem) {
    return Status::InvalidArgument(fmt::format("{}: {}: {}", kind, p.ToString(), problem));
  };
  std::string api_version;
  if (const json* a = Find(j, "apiVersion")) {
    if (!a->is_string()) return list_error(root.Field("apiVersion"), "expected string, got " + TypeName(*a));
    api_version = a->get_ref<const std::string&>();
  }

  ObjectList list;
  list.kind = kind;
  if (const json* meta = Find(j, "metadata")) {
    const Path mp = root.Field("metadata");
    if (!meta->is_object()) return list_error(mp, "expected object, got " + TypeName(*meta));
    for (auto [key, out] :
         {std::pair<std::string_view, std::string*>{"resourceVersion", &list.resource_version},
          {"continue", &list.continue_token}}) {
      if (const json* v = Find(*meta, key)) {
        if (!v->is_string()) return list_error(mp.Field(key), "expected string, got " + TypeName(*v));
        *out = v->get_ref<const std::string&>();
      }
    }
  }

  const json* items = Find(j, "items");
  if (items == nullptr) return list;
  const Path ip = root.Field("items");
  if (!items->is_array()) return list_error(ip, "expected array, got " + TypeName(*items));

  DecodeOptions opt;
  // "PodList" items are Pods; the generic "List" has items that name their own kind.
  opt.default_kind = std::string_view(kind).substr(0, kind.size() - 4);
  opt.default_api_version = api_version;
  list.items.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    auto obj = DecodeValue((*items)[i], opt);
    if (!obj.ok()) return obj.status().WithPrefix(fmt::format("{} items[{}]", kind, i));
    list.items.push_back(std::move(obj).value());
  }
  return list;
}

Result<ApiStatus> DecodeApiStatusValue(const json& j) {
  if (!j.is_object()) return NotAnObject(j);
  Ctx c;
  c.kind = "Status";
  const Path root;
  std::string kind;
  VC_RETURN_IF_ERROR(Get(c, j, root, "kind", &kind));
  if (!kind.empty() && kind != "Status") {
    return c.Error(root.Field("kind"), fmt::format("expected Status, got \"{}\"", kind));
  }
  ApiStatus st;
  VC_RETURN_IF_ERROR(Get(c, j, root, "status", &st.status));
  VC_RETURN_IF_ERROR(Get(c, j, root, "message", &st.message));
  VC_RETURN_IF_ERROR(Get(c, j, root, "reason", &st.reason));
  VC_RETURN_IF_ERROR(Get(c, j, root, "code", &st.code));
  return st;
}

Result<WatchEvent> DecodeWatchEventValue(const json& j) {
  auto fail = [](std::string_view problem) {
    return Status::InvalidArgument(fmt::format("watch event: {}", problem));
  };
  if (!j.is_object()) return fail(fmt::format("expected an object, got {}", TypeName(j)));
  const json* type = Find(j, "type");
  if (type == nullptr) return fail("type: missing required field");
  if (!type->is_string()) return fail("type: expected string, got " + TypeName(*type));
  const std::string& name = type->get_ref<const std::string&>();
  WatchEvent ev;
  if (name == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    return fail(fmt::format("type: unknown watch event type \"{}\"", name));
  }
  const json* object = Find(j, "object");
  if (object == nullptr) return fail(fmt::format("{}: object: missing required field", name));
  if (!object->is_object()) {
    return fail(fmt::format("{}: object: expected an object, got {}", name, TypeName(*object)));
  }
  if (ev.type == WatchEventType::kError) {
    auto st = DecodeApiStatusValue(*object);
    if (!st.ok()) return st.status().WithPrefix("watch event ERROR: object");
    ev.error = std::move(st).value();
    return ev;
  }
  DecodeOptions opt;
  opt.bookmark = ev.type == WatchEventType::kBookmark;
  auto obj = DecodeValue(*object, opt);
  if (!obj.ok()) return obj.status();  // already names the object and the field
  ev.object = std::move(obj).value();
  return ev;
}

// ------------------------------------------------------------------------- JSON parsing

Status TooLarge(size_t size) {
  return Status::InvalidArgument(
      fmt::format("document of {} bytes exceeds the limit of {} bytes", size, kMaxDocumentBytes));
}

Result<json> ParseJson(std::string_view text) {
  if (text.size() > kMaxDocumentBytes) return TooLarge(text.size());
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // Drop the "[json.exception.parse_error.101] " tag; keep the position and the reason.
    std::string_view what = e.what();
    if (!what.empty() && what.front() == '[') {
      if (auto close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
    }
    return Status::InvalidArgument(fmt::format("invalid JSON: {}", what));
  }
}

// Runs `fn` and turns any escaping exception into a Status (allocation failure, or a library
// exception this file failed to anticipate): nothing throws out of the decoder.
template <typename T, typename Fn>
Result<T> Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("out of memory while decoding");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("decode failed: {}", e.what()));
  }
}

// ------------------------------------------------------------------------- YAML parsing
//
// yaml-cpp's event API (YAML::Parser + EventHandler) feeds a JSON builder directly rather than
// going through YAML::LoadAll and YAML::Node, for three reasons: LoadAll in yaml-cpp 0.7 loops
// forever, allocating, on a stray token at document level (input `,` — jbeder/yaml-cpp#1040,
// fixed upstream only in 0.8.1), and we must stop that from outside; YAML::Node turns a
// self-referencing alias into a cyclic graph; and building one value tree instead of two is
// cheaper. Our builder keeps an explicit stack, so nothing here recurses on input depth
// (yaml-cpp's own parser is bounded by its depth guard).

// Deepest nesting accepted. Real manifests (CRD schemas included) stay well below 64.
constexpr size_t kMaxYamlDepth = 256;

std::string YamlWhere(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return "";
  return fmt::format("line {}, column {}: ", mark.line + 1, mark.column + 1);
}

// Builds one nlohmann::json value per YAML document from parser events. Events cannot fail,
// so the first error is recorded and every later event of the document is ignored.
class JsonBuilder final : public YAML::EventHandler {
 public:
  // `budget` bounds the number of JSON nodes produced across the stream, counting every
  // alias expansion, so an alias bomb fails fast instead of exhausting memory.
  explicit JsonBuilder(size_t budget) : budget_(budget) {}

  const Status& status() const { return error_; }
  // The finished document (null for an empty one) and where its content starts.
  json& document() { return root_; }
  const YAML::Mark& document_mark() const { return doc_mark_; }
  const YAML::Mark& start_mark() const { return start_mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    stack_.clear();
    root_ = nullptr;
    start_mark_ = mark;
    doc_mark_ = YAML::Mark::null_mark();
    have_doc_mark_ = false;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      SetKey("null");
      return;
    }
    if (!Spend(mark, 1)) return;
    Emit(json(nullptr), anchor, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!Begin(mark)) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      Fail(mark, "alias refers to an anchor that encloses it (recursive alias)");
      return;
    }
    if (AwaitingKey()) {
      const json& v = it->second.value;
      if (v.is_string()) {
        SetKey(v.get<std::string>());
      } else if (v.is_primitive() && !v.is_null()) {
        SetKey(v.dump());
      } else {
        Fail(mark, "mapping keys must be scalars");
      }
      return;
    }
    const size_t nodes = it->second.nodes;
    if (!Spend(mark, nodes)) return;
    Emit(json(it->second.value), YAML::NullAnchor, 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      // Keys keep their text (`1.0:` is the key "1.0"), whatever the scalar would resolve to.
      SetKey(value);
      if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{json(value), 1};
      return;
    }
    json v;
    if (!ResolveScalar(mark, tag, value, &v)) return;
    if (!Spend(mark, 1)) return;
    Emit(std::move(v), anchor, 1);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::object());
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor;
    size_t spent_at_open;  // budget spent before this collection, to size its anchor
    bool have_key = false;
    std::string key;
  };
  struct Anchored {
    json value;
    size_t nodes;
  };

  // False once the document has failed; records where its content starts.
  bool Begin(const YAML::Mark& mark) {
    if (!error_.ok()) return false;
    if (!have_doc_mark_) {
      doc_mark_ = mark;
      have_doc_mark_ = true;
    }
    return true;
  }

  void Fail(const YAML::Mark& mark, std::string_view problem) {
    if (error_.ok())
      error_ = Status::InvalidArgument(fmt::format("invalid YAML: {}{}", YamlWhere(mark), problem));
  }

  bool Spend(const YAML::Mark& mark, size_t nodes) {
    if (nodes > budget_ - spent_) {
      Fail(mark, "document expands to too many nodes (alias expansion?)");
      return false;
    }
    spent_ += nodes;
    return true;
  }

  bool AwaitingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key;
  }

  void SetKey(std::string key) {
    stack_.back().key = std::move(key);
    stack_.back().have_key = true;
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json empty) {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      Fail(mark, "mapping keys must be scalars");
      return;
    }
    if (stack_.size() >= kMaxYamlDepth) {
      Fail(mark, fmt::format("nesting deeper than {} levels", kMaxYamlDepth));
      return;
    }
    if (!Spend(mark, 1)) return;
    stack_.push_back(Frame{std::move(empty), anchor, spent_ - 1, false, {}});
  }

  void Close() {
    if (!error_.ok() || stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Emit(std::move(f.value), f.anchor, spent_ - f.spent_at_open);
  }

  // Places a finished value into its parent (or as the document) and remembers it under its
  // anchor. `nodes` is its size in budget units, charged again for every alias to it.
  void Emit(json v, YAML::anchor_t anchor, size_t nodes) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{v, nodes};
    if (stack_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(v));
    } else {
      top.value[top.key] = std::move(v);  // a repeated key: the last one wins, as in JSON
      top.have_key = false;
    }
  }

  // Plain scalars resolve like Kubernetes manifests expect: null, booleans and integers are
  // typed; everything else, floats included, stays a string so `cpu: 0.5` keeps its exact
  // decimal text. Quoted scalars (tag "!") are always strings.
  bool ResolveScalar(const YAML::Mark& mark, const std::string& tag, const std::string& s, json* out) {
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:float") {
      *out = s;
      return true;
    }
    if (tag == "tag:yaml.org,2002:null" || s.empty() || s == "~" || s == "null" || s == "Null" ||
        s == "NULL") {
      *out = nullptr;
      return true;
    }
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
      return true;
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
      return true;
    }
    if (IsDecimalInteger(s)) {
      const char* first = s.data() + (s[0] == '+' ? 1 : 0);
      const char* last = s.data() + s.size();
      int64_t i = 0;
      if (auto r = std::from_chars(first, last, i); r.ec == std::errc() && r.ptr == last) {
        *out = i;
        return true;
      }
      uint64_t u = 0;
      if (auto r = std::from_chars(first, last, u); r.ec == std::errc() && r.ptr == last) {
        *out = u;
        return true;
      }
      // Beyond 64 bits: keep the text (a quantity can still be exact).
    }
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:bool") {
      Fail(mark,
           fmt::format("\"{}\" is not a valid {}", s.size() <= 64 ? s : s.substr(0, 64), tag.substr(18)));
      return false;
    }
    *out = s;
    return true;
  }

  static bool IsDecimalInteger(std::string_view s) {
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
    if (s.empty()) return false;
    for (char ch : s) {
      if (ch < '0' || ch > '9') return false;
    }
    return true;
  }

  const size_t budget_;
  size_t spent_ = 0;
  std::vector<Frame> stack_;
  json root_;
  YAML::Mark start_mark_ = YAML::Mark::null_mark();
  YAML::Mark doc_mark_ = YAML::Mark::null_mark();
  bool have_doc_mark_ = false;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  Status error_;
};

// A parsed YAML (or JSON) document and where it starts, for error messages.
struct Document {
  json value;
  int index = 0;  // 1-based position in the stream
  int line = 0;   // 1-based; 0 when unknown
};

Result<std::vector<Document>> ParseYamlStream(std::string_view text) {
  if (text.size() > kMaxDocumentBytes) return TooLarge(text.size());
  std::vector<Document> docs;

  // A JSON document (kubectl -o json, API responses) keeps its number types exactly when
  // read by the JSON parser; a YAML flow mapping that is not valid JSON falls through.
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) {
      docs.push_back(Document{std::move(j), 1, 1});
      return docs;
    }
  }

  std::istringstream in{std::string(text)};
  JsonBuilder builder(2 * text.size() + 1024);
  int index = 0;
  int previous_pos = -1;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      ++index;
      if (!builder.status().ok()) return builder.status().WithPrefix(fmt::format("document {}", index));
      // A document that starts where the previous one started consumed nothing: yaml-cpp is
      // stuck on a token it cannot place (and would repeat it forever).
      const YAML::Mark& start = builder.start_mark();
      if (start.pos == previous_pos) {
        const char ch =
            static_cast<size_t>(start.pos) < text.size() ? text[static_cast<size_t>(start.pos)] : '?';
        return Status::InvalidArgument(
            fmt::format("invalid YAML: {}unexpected '{}'", YamlWhere(start), std::string(1, ch)));
      }
      previous_pos = start.pos;
      if (builder.document().is_null()) continue;  // empty document (`---` with nothing after it)
      const YAML::Mark& mark = builder.document_mark();
      docs.push_back(Document{std::move(builder.document()), index, mark.is_null() ? 0 : mark.line + 1});
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("invalid YAML: {}{}", YamlWhere(e.mark), e.msg));
  }
  return docs;
}

Status AppendObjects(const json& j, std::vector<Object>* out) {
  if (LooksLikeList(j)) {
    auto list = DecodeListValue(j);
    if (!list.ok()) return list.status();
    for (Object& o : list->items) out->push_back(std::move(o));
    return Status::Ok();
  }
  auto obj = DecodeValue(j, DecodeOptions{});
  if (!obj.ok()) return obj.status();
  out->push_back(std::move(obj).value());
  return Status::Ok();
}

Result<std::vector<Object>> DecodeYamlImpl(std::string_view text) {
  auto docs = ParseYamlStream(text);
  if (!docs.ok()) return docs.status();
  std::vector<Object> out;
  for (const Document& d : *docs) {
    Status st = AppendObjects(d.value, &out);
    if (!st.ok()) {
      return st.WithPrefix(d.line > 0 ? fmt::format("document {} (line {})", d.index, d.line)
                                      : fmt::format("document {}", d.index));
    }
  }
  return out;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status::InvalidArgument(fmt::format("cannot read: {}", ec.message()));
  if (size > kMaxDocumentBytes) return TooLarge(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot open for reading");
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

Result<std::vector<Object>> DecodeJsonLines(std::string_view text) {
  std::vector<Object> out;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto ev = DecodeWatchEvent(line);
    if (!ev.ok()) return ev.status().WithPrefix(fmt::format("line {}", line_no));
    switch (ev->type) {
      case WatchEventType::kBookmark:
        break;  // carries a resourceVersion, not an object
      case WatchEventType::kError:
        return Status::InvalidArgument(fmt::format("line {}: watch ERROR event: {} ({}, code {})", line_no,
                                                   ev->error.message, ev->error.reason, ev->error.code));
      default:
        out.push_back(std::move(*ev->object));
    }
  }
  return out;
}

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

// ----------------------------------------------------------------------- public functions

Result<TimeMs> ParseTimestamp(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("invalid timestamp \"{}\": {} (want RFC 3339, e.g. 2006-01-02T15:04:05Z)",
                    text.size() <= 64 ? text : text.substr(0, 64), why));
  };
  size_t pos = 0;
  auto digits = [&](size_t n, int* out) {
    if (pos + n > text.size()) return false;
    int v = 0;
    for (size_t i = 0; i < n; ++i) {
      const char ch = text[pos + i];
      if (ch < '0' || ch > '9') return false;
      v = v * 10 + (ch - '0');
    }
    pos += n;
    *out = v;
    return true;
  };
  auto expect = [&](std::string_view chars) {
    if (pos < text.size() && chars.find(text[pos]) != std::string_view::npos) {
      ++pos;
      return true;
    }
    return false;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(4, &year) || !expect("-") || !digits(2, &month) || !expect("-") || !digits(2, &day)) {
    return bad("malformed date");
  }
  if (!expect("Tt")) return bad("expected 'T' after the date");
  if (!digits(2, &hour) || !expect(":") || !digits(2, &minute) || !expect(":") || !digits(2, &second)) {
    return bad("malformed time of day");
  }
  static constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return bad("month out of range");
  const int mdays = kDaysInMonth[month - 1] + (month == 2 && IsLeap(year) ? 1 : 0);
  if (day < 1 || day > mdays) return bad("day out of range");
  if (hour > 23 || minute > 59 || second > 59) return bad("time of day out of range");
  int64_t millis = 0;
  if (expect(".")) {
    const size_t start = pos;
    int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;  // digits beyond milliseconds are truncated
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad("expected digits after '.'");
  }
  int offset_minutes = 0;
  if (expect("Zz")) {
    // UTC
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const bool negative = text[pos] == '-';
    ++pos;
    int oh = 0, om = 0;
    if (!digits(2, &oh) || !expect(":") || !digits(2, &om)) return bad("malformed UTC offset");
    if (oh > 23 || om > 59) return bad("UTC offset out of range");
    offset_minutes = (oh * 60 + om) * (negative ? -1 : 1);
  } else {
    return bad("missing time zone ('Z' or an offset such as +02:00)");
  }
  if (pos != text.size()) return bad("trailing characters");
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - int64_t{offset_minutes} * 60;
  return seconds * 1000 + millis;
}

Result<Object> DecodeObjectJson(const nlohmann::json& j) {
  return Guard<Object>([&]() -> Result<Object> { return DecodeValue(j, DecodeOptions{}); });
}

Result<Object> DecodeObjectReference(std::string_view text) {
  return Guard<Object>([&]() -> Result<Object> {
    auto j = ParseJson(text);
    if (!j.ok()) return j.status();
    return DecodeValue(*j, DecodeOptions{});
  });
}

// The public JSON entry points: the streaming fast path when it handles the input, else the
// reference decoder, which defines results and errors (see decode_fast.h).
Result<Object> DecodeObject(std::string_view text) {
  Object obj;
  if (FastDecodeObject(text, &obj)) return obj;
  return DecodeObjectReference(text);
}

Result<ObjectList> DecodeList(std::string_view text) {
  ObjectList list;
  if (FastDecodeList(text, &list)) return list;
  return DecodeListReference(text);
}

Result<WatchEvent> DecodeWatchEvent(std::string_view text) {
  WatchEvent ev;
  if (FastDecodeWatchEvent(text, &ev)) return ev;
  return DecodeWatchEventReference(text);
}

namespace {

template <typename T>
Result<T> DecodeAs(std::string_view text, std::string_view want) {
  auto obj = DecodeObject(text);
  if (!obj.ok()) return obj.status();
  if (T* typed = std::get_if<T>(&*obj)) return std::move(*typed);
  return Status::InvalidArgument(fmt::format("{}: expected a {}", DescribeObject(*obj), want));
}

}  // namespace

Result<Pod> DecodePod(std::string_view json) { return DecodeAs<Pod>(json, "Pod"); }
Result<Node> DecodeNode(std::string_view json) { return DecodeAs<Node>(json, "Node"); }
Result<PodGroup> DecodePodGroup(std::string_view json) { return DecodeAs<PodGroup>(json, "PodGroup"); }
Result<Queue> DecodeQueue(std::string_view json) { return DecodeAs<Queue>(json, "Queue"); }
Result<PriorityClass> DecodePriorityClass(std::string_view json) {
  return DecodeAs<PriorityClass>(json, "PriorityClass");
}
Result<ResourceQuota> DecodeResourceQuota(std::string_view json) {
  return DecodeAs<ResourceQuota>(json, "ResourceQuota");
}

Result<ObjectList> DecodeListReference(std::string_view text) {
  return Guard<ObjectList>([&]() -> Result<ObjectList> {
    auto j = ParseJson(text);
    if (!j.ok()) return j.status();
    return DecodeListValue(*j);
  });
}

Result<WatchEvent> DecodeWatchEventReference(std::string_view text) {
  return Guard<WatchEvent>([&]() -> Result<WatchEvent> {
    auto j = ParseJson(text);
    if (!j.ok()) return j.status().WithPrefix("watch event");
    return DecodeWatchEventValue(*j);
  });
}

Result<ApiStatus> DecodeApiStatus(std::string_view text) {
  return Guard<ApiStatus>([&]() -> Result<ApiStatus> {
    auto j = ParseJson(text);
    if (!j.ok()) return j.status();
    return DecodeApiStatusValue(*j);
  });
}

Result<std::vector<Object>> DecodeYamlDocuments(std::string_view yaml) {
  return Guard<std::vector<Object>>([&] { return DecodeYamlImpl(yaml); });
}

Result<std::vector<Object>> DecodeFile(const std::string& path) {
  auto result = Guard<std::vector<Object>>([&]() -> Result<std::vector<Object>> {
    auto data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json") {
      auto j = ParseJson(*data);
      if (!j.ok()) return j.status();
      std::vector<Object> out;
      VC_RETURN_IF_ERROR(AppendObjects(*j, &out));
      return out;
    }
    if (ext == ".jsonl") return DecodeJsonLines(*data);
    return DecodeYamlImpl(*data);
  });
  if (!result.ok()) return result.status().WithPrefix(path);
  return result;
}

}  // namespace volcache::k8s
