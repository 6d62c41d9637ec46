// The Kubernetes object decoder, JSON half: nlohmann/json values into the object model of
// api/k8s/objects.h (the reference decoder of decode_fast.h, and the public JSON entry points).
// YAML documents and files are decoded in decode_yaml.cc, timestamps parsed in timestamps.cc.
//
// Shape of the code: every value is decoded by a small Conv() overload that knows its own
// location (a Path chain of stack frames, rendered only when an error is reported, so the
// happy path allocates nothing for error reporting). A Ctx carries the object's kind,
// namespace and name so that every error reads `<Kind> <ns>/<name>: <field.path>: <problem>`.
// Library exceptions are caught at the public functions; nothing throws out of this file.

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/k8s/compact.h"
#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"
#include "api/k8s/decode_internal.h"
#include "api/k8s/json_fwd.h"
#include "api/k8s/timestamps.h"

namespace volcache::k8s {

using namespace decode_internal;  // NOLINT(google-build-using-namespace): defined here

namespace {

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

// A string field, whatever its type (std::string, ShortString, UidString, Interned).
template <class S>
requires(std::is_same_v<S, std::string> || std::is_same_v<S, ShortString> || std::is_same_v<S, UidString> ||
         std::is_same_v<S, Interned> || std::is_same_v<S, VersionString>) Status
    Conv(const Ctx& c, const json& v, const Path& p, S* out) {
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

// INT64_MIN is OptionalInt64's "absent": refused as a value, like any out-of-range integer.
Status Conv(const Ctx& c, const json& v, const Path& p, OptionalInt64* out) {
  int64_t i = 0;
  VC_RETURN_IF_ERROR(ConvInt(c, v, p, INT64_MIN + 1, INT64_MAX, "int64", &i));
  *out = i;
  return Status::Ok();
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
  if (v.size() > StringMap::kMaxSize) {
    return c.Error(p, fmt::format("{} entries: a map of labels, annotations or selectors holds at most {}",
                                  v.size(), StringMap::kMaxSize));
  }
  PlainStringMap m;
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

template <typename T>
Status Conv(const Ctx& c, const json& v, const Path& p, Boxed<T>* out) {
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

Status GetTime(const Ctx& c, const json& obj, const Path& p, std::string_view key, OptionalInt64* out) {
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
  int64_t generation = 0;
  VC_RETURN_IF_ERROR(Get(c, m, p, "generation", &generation));
  meta->set_generation(generation);
  VC_RETURN_IF_ERROR(GetTime(c, m, p, "creationTimestamp", &meta->creation_timestamp));
  VC_RETURN_IF_ERROR(GetTime(c, m, p, "deletionTimestamp", &meta->deletion_timestamp));
  OptionalInt64 grace;
  VC_RETURN_IF_ERROR(Get(c, m, p, "deletionGracePeriodSeconds", &grace));
  meta->set_deletion_grace_period_seconds(grace);
  VC_RETURN_IF_ERROR(Get(c, m, p, "labels", &meta->labels));
  VC_RETURN_IF_ERROR(Get(c, m, p, "annotations", &meta->annotations));
  return ForEachObject(c, m, p, "ownerReferences", [&](const json& o, const Path& op) {
    OwnerReference ref;
    VC_RETURN_IF_ERROR(DecodeOwnerReference(c, o, op, &ref));
    meta->owner_references.push_back(std::move(ref));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------- label selectors

Status ConvStrings(const Ctx& c, const json& v, const Path& p, std::vector<std::string>* out) {
  if (!v.is_array()) return TypeError(c, p, "array", v);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string s;
    VC_RETURN_IF_ERROR(Conv(c, v[i], p.Index(i), &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status Conv(const Ctx& c, const json& v, const Path& p, LabelSelector* out) {
  if (!v.is_object()) return TypeError(c, p, "object", v);
  VC_RETURN_IF_ERROR(Get(c, v, p, "matchLabels", &out->match_labels));
  return ForEachObject(c, v, p, "matchExpressions", [&](const json& o, const Path& ep) {
    LabelSelectorRequirement r;
    VC_RETURN_IF_ERROR(Get(c, o, ep, "key", &r.key));
    VC_RETURN_IF_ERROR(Get(c, o, ep, "operator", &r.op));
    if (const json* vals = Find(o, "values"))
      VC_RETURN_IF_ERROR(ConvStrings(c, *vals, ep.Field("values"), &r.values));
    if (r.key.empty()) return c.Error(ep.Field("key"), "missing required field");
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) return c.Error(ep.Field("values"), "must be non-empty for operator " + r.op);
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) return c.Error(ep.Field("values"), "must be empty for operator " + r.op);
    } else {
      return c.Error(ep.Field("operator"),
                     fmt::format("\"{}\" is not a valid label selector operator", r.op));
    }
    out->match_expressions.push_back(std::move(r));
    return Status::Ok();
  });
}

// ------------------------------------------------------------------ placement constraints
//
// spec.affinity and spec.topologySpreadConstraints, refused where the API server refuses them
// (Kubernetes' pkg/apis/core/validation: ValidateAffinity, validateTopologySpreadConstraints).
// The fast path (decode_fast.cc) applies the same rules and leaves any violation to these
// functions, which name the field.

// strconv.ParseInt(s, 10, 64), how Kubernetes reads the value of a Gt/Lt node selector
// requirement: an optional sign, then decimal digits, within int64's range.
bool ParsesAsInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  }
  int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end;
}

// One of matchExpressions (over a node's labels) or, when `field`, of matchFields (over its
// fields: only metadata.name, with In or NotIn and exactly one value).
Status ConvNodeSelectorRequirement(const Ctx& c, const json& o, const Path& p, bool field,
                                   NodeSelectorRequirement* r) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "key", &r->key));
  VC_RETURN_IF_ERROR(Get(c, o, p, "operator", &r->op));
  if (const json* vals = Find(o, "values")) {
    VC_RETURN_IF_ERROR(ConvStrings(c, *vals, p.Field("values"), &r->values));
  }
  if (field) {
    if (r->key != "metadata.name") {
      return c.Error(
          p.Field("key"),
          fmt::format("\"{}\" is not a valid node field selector key (only metadata.name)", r->key));
    }
    if (r->op != "In" && r->op != "NotIn") {
      return c.Error(p.Field("operator"),
                     fmt::format("\"{}\" is not a valid node field selector operator (In or NotIn)", r->op));
    }
    if (r->values.size() != 1) {
      return c.Error(p.Field("values"),
                     fmt::format("must hold exactly one value for operator {} in matchFields, "
                                 "got {}",
                                 r->op, r->values.size()));
    }
    return Status::Ok();
  }
  if (r->key.empty()) return c.Error(p.Field("key"), "missing required field");
  if (r->op == "In" || r->op == "NotIn") {
    if (r->values.empty()) return c.Error(p.Field("values"), "must be non-empty for operator " + r->op);
  } else if (r->op == "Exists" || r->op == "DoesNotExist") {
    if (!r->values.empty()) return c.Error(p.Field("values"), "must be empty for operator " + r->op);
  } else if (r->op == "Gt" || r->op == "Lt") {
    if (r->values.size() != 1) {
      return c.Error(p.Field("values"), fmt::format("must hold exactly one value for operator {}, got {}",
                                                    r->op, r->values.size()));
    }
    if (!ParsesAsInt64(r->values[0])) {
      return c.Error(
          p.Field("values").Index(0),
          fmt::format("\"{}\" is not an integer (operator {} compares integers)", r->values[0], r->op));
    }
  } else {
    return c.Error(p.Field("operator"), fmt::format("\"{}\" is not a valid node selector operator", r->op));
  }
  return Status::Ok();
}

Status ConvNodeSelectorTerm(const Ctx& c, const json& o, const Path& p, NodeSelectorTerm* t) {
  for (const bool field : {false, true}) {
    auto* out = field ? &t->match_fields : &t->match_expressions;
    VC_RETURN_IF_ERROR(ForEachObject(c, o, p, field ? "matchFields" : "matchExpressions",
                                     [&](const json& e, const Path& ep) {
                                       NodeSelectorRequirement r;
                                       VC_RETURN_IF_ERROR(ConvNodeSelectorRequirement(c, e, ep, field, &r));
                                       out->push_back(std::move(r));
                                       return Status::Ok();
                                     }));
  }
  return Status::Ok();
}

// The weight of a preferred term: 1..100 (absent is 0, refused).
Status GetWeight(const Ctx& c, const json& o, const Path& p, int32_t* weight) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "weight", weight));
  if (*weight < 1 || *weight > 100) {
    return c.Error(p.Field("weight"), fmt::format("must be in the range 1-100, got {}", *weight));
  }
  return Status::Ok();
}

// requiredDuringSchedulingIgnoredDuringExecution is kept when present, even with no terms (it
// then matches no node); the API server refuses an empty list, older manifests carry `{}`.
Status DecodeNodeAffinity(const Ctx& c, const json& na, const Path& p, NodeAffinity* out) {
  const json* required = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, na, p, "requiredDuringSchedulingIgnoredDuringExecution", &required));
  if (required != nullptr) {
    const Path rp = p.Field("requiredDuringSchedulingIgnoredDuringExecution");
    std::vector<NodeSelectorTerm> terms;
    VC_RETURN_IF_ERROR(
        ForEachObject(c, *required, rp, "nodeSelectorTerms", [&](const json& o, const Path& tp) {
          NodeSelectorTerm t;
          VC_RETURN_IF_ERROR(ConvNodeSelectorTerm(c, o, tp, &t));
          terms.push_back(std::move(t));
          return Status::Ok();
        }));
    out->required = std::move(terms);
  }
  return ForEachObject(
      c, na, p, "preferredDuringSchedulingIgnoredDuringExecution", [&](const json& o, const Path& tp) {
        PreferredSchedulingTerm t;
        VC_RETURN_IF_ERROR(GetWeight(c, o, tp, &t.weight));
        const json* preference = nullptr;
        VC_RETURN_IF_ERROR(GetObject(c, o, tp, "preference", &preference));
        if (preference != nullptr) {
          VC_RETURN_IF_ERROR(ConvNodeSelectorTerm(c, *preference, tp.Field("preference"), &t.preference));
        }
        out->preferred.push_back(std::move(t));
        return Status::Ok();
      });
}

// A null or absent selector stays std::nullopt (it matches no pod).
Status ConvPodAffinityTerm(const Ctx& c, const json& o, const Path& p, PodAffinityTerm* t) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "labelSelector", &t->label_selector));
  if (const json* ns = Find(o, "namespaces")) {
    VC_RETURN_IF_ERROR(ConvStrings(c, *ns, p.Field("namespaces"), &t->namespaces));
  }
  VC_RETURN_IF_ERROR(Get(c, o, p, "namespaceSelector", &t->namespace_selector));
  VC_RETURN_IF_ERROR(Get(c, o, p, "topologyKey", &t->topology_key));
  if (t->topology_key.empty()) return c.Error(p.Field("topologyKey"), "must not be empty");
  return Status::Ok();
}

// podAffinity or podAntiAffinity.
Status DecodePodAffinity(const Ctx& c, const json& a, const Path& p, PodAffinity* out) {
  VC_RETURN_IF_ERROR(ForEachObject(c, a, p, "requiredDuringSchedulingIgnoredDuringExecution",
                                   [&](const json& o, const Path& tp) {
                                     PodAffinityTerm t;
                                     VC_RETURN_IF_ERROR(ConvPodAffinityTerm(c, o, tp, &t));
                                     out->required.push_back(std::move(t));
                                     return Status::Ok();
                                   }));
  return ForEachObject(c, a, p, "preferredDuringSchedulingIgnoredDuringExecution",
                       [&](const json& o, const Path& tp) {
                         WeightedPodAffinityTerm t;
                         VC_RETURN_IF_ERROR(GetWeight(c, o, tp, &t.weight));
                         const json* term = nullptr;
                         VC_RETURN_IF_ERROR(GetObject(c, o, tp, "podAffinityTerm", &term));
                         const Path pp = tp.Field("podAffinityTerm");
                         if (term == nullptr) return c.Error(pp, "missing required field");
                         VC_RETURN_IF_ERROR(ConvPodAffinityTerm(c, *term, pp, &t.term));
                         out->preferred.push_back(std::move(t));
                         return Status::Ok();
                       });
}

// nodeAffinityPolicy and nodeTaintsPolicy: "" (unset), Honor or Ignore.
Status GetNodeInclusionPolicy(const Ctx& c, const json& o, const Path& p, std::string_view key,
                              std::string* out) {
  VC_RETURN_IF_ERROR(Get(c, o, p, key, out));
  if (!out->empty() && *out != "Honor" && *out != "Ignore") {
    return c.Error(p.Field(key), fmt::format("\"{}\" is not one of Honor, Ignore", *out));
  }
  return Status::Ok();
}

// maxSkew defaults to 1 and whenUnsatisfiable (absent, null or "") to DoNotSchedule.
Status DecodeSpreadConstraint(const Ctx& c, const json& o, const Path& p, TopologySpreadConstraint* t) {
  VC_RETURN_IF_ERROR(Get(c, o, p, "maxSkew", &t->max_skew));
  if (t->max_skew <= 0) {
    return c.Error(p.Field("maxSkew"), fmt::format("must be greater than zero, got {}", t->max_skew));
  }
  VC_RETURN_IF_ERROR(Get(c, o, p, "topologyKey", &t->topology_key));
  if (t->topology_key.empty()) return c.Error(p.Field("topologyKey"), "must not be empty");
  VC_RETURN_IF_ERROR(Get(c, o, p, "whenUnsatisfiable", &t->when_unsatisfiable));
  if (t->when_unsatisfiable.empty()) t->when_unsatisfiable = "DoNotSchedule";
  if (t->when_unsatisfiable != "DoNotSchedule" && t->when_unsatisfiable != "ScheduleAnyway") {
    return c.Error(p.Field("whenUnsatisfiable"),
                   fmt::format("\"{}\" is not one of DoNotSchedule, ScheduleAnyway", t->when_unsatisfiable));
  }
  VC_RETURN_IF_ERROR(Get(c, o, p, "labelSelector", &t->label_selector));
  VC_RETURN_IF_ERROR(Get(c, o, p, "minDomains", &t->min_domains));
  if (t->min_domains) {
    if (*t->min_domains <= 0) {
      return c.Error(p.Field("minDomains"),
                     fmt::format("must be greater than zero, got {}", *t->min_domains));
    }
    if (t->when_unsatisfiable != "DoNotSchedule") {
      return c.Error(
          p.Field("minDomains"),
          fmt::format("can only be set with whenUnsatisfiable DoNotSchedule, not {}", t->when_unsatisfiable));
    }
  }
  VC_RETURN_IF_ERROR(GetNodeInclusionPolicy(c, o, p, "nodeAffinityPolicy", &t->node_affinity_policy));
  VC_RETURN_IF_ERROR(GetNodeInclusionPolicy(c, o, p, "nodeTaintsPolicy", &t->node_taints_policy));
  if (const json* keys = Find(o, "matchLabelKeys")) {
    VC_RETURN_IF_ERROR(ConvStrings(c, *keys, p.Field("matchLabelKeys"), &t->match_label_keys));
  }
  return Status::Ok();
}

// The constraints of spec.topologySpreadConstraints; no two with the same topologyKey and
// whenUnsatisfiable (as the API server requires).
Status DecodeSpreadConstraints(const Ctx& c, const json& s, const Path& p,
                               std::vector<TopologySpreadConstraint>* out) {
  return ForEachObject(c, s, p, "topologySpreadConstraints", [&](const json& o, const Path& tp) {
    TopologySpreadConstraint t;
    VC_RETURN_IF_ERROR(DecodeSpreadConstraint(c, o, tp, &t));
    for (size_t i = 0; i < out->size(); ++i) {
      const TopologySpreadConstraint& prev = (*out)[i];
      if (prev.topology_key == t.topology_key && prev.when_unsatisfiable == t.when_unsatisfiable) {
        return c.Error(tp, fmt::format("topologyKey \"{}\" with whenUnsatisfiable {} repeats "
                                       "topologySpreadConstraints[{}]",
                                       t.topology_key, t.when_unsatisfiable, i));
      }
    }
    out->push_back(std::move(t));
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
                        Shared<std::vector<Container>>* out) {
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
  std::optional<int32_t> priority = spec->priority.get();
  VC_RETURN_IF_ERROR(Get(c, s, p, "priority", &priority));
  spec->priority = priority;
  VC_RETURN_IF_ERROR(Get(c, s, p, "priorityClassName", &spec->priority_class_name));
  VC_RETURN_IF_ERROR(DecodeContainers(c, s, p, "containers", false, &spec->containers));
  VC_RETURN_IF_ERROR(DecodeContainers(c, s, p, "initContainers", true, &spec->init_containers));
  ResourceList overhead;
  VC_RETURN_IF_ERROR(Get(c, s, p, "overhead", &overhead));
  if (!overhead.empty()) spec->mutable_rare().overhead = std::move(overhead);
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
    // Read into locals: the rare block is made only for a pod that sets a term.
    NodeAffinity node_affinity;
    PodAffinity pod_affinity;
    PodAffinity pod_anti_affinity;
    const json* sub = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "nodeAffinity", &sub));
    spec->has_node_affinity = sub != nullptr;
    if (sub != nullptr)
      VC_RETURN_IF_ERROR(DecodeNodeAffinity(c, *sub, ap.Field("nodeAffinity"), &node_affinity));
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "podAffinity", &sub));
    spec->has_pod_affinity = sub != nullptr;
    if (sub != nullptr)
      VC_RETURN_IF_ERROR(DecodePodAffinity(c, *sub, ap.Field("podAffinity"), &pod_affinity));
    VC_RETURN_IF_ERROR(GetObject(c, *affinity, ap, "podAntiAffinity", &sub));
    spec->has_pod_anti_affinity = sub != nullptr;
    if (sub != nullptr) {
      VC_RETURN_IF_ERROR(DecodePodAffinity(c, *sub, ap.Field("podAntiAffinity"), &pod_anti_affinity));
    }
    if (node_affinity.required || !node_affinity.preferred.empty()) {
      spec->mutable_rare().node_affinity = std::move(node_affinity);
    }
    if (!pod_affinity.required.empty() || !pod_affinity.preferred.empty()) {
      spec->mutable_rare().pod_affinity = std::move(pod_affinity);
    }
    if (!pod_anti_affinity.required.empty() || !pod_anti_affinity.preferred.empty()) {
      spec->mutable_rare().pod_anti_affinity = std::move(pod_anti_affinity);
    }
  }
  std::vector<TopologySpreadConstraint> spread;
  VC_RETURN_IF_ERROR(DecodeSpreadConstraints(c, s, p, &spread));
  if (!spread.empty()) spec->mutable_rare().topology_spread_constraints = std::move(spread);
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "volumes", [&](const json& o, const Path& vp) {
    const json* pvc = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, o, vp, "persistentVolumeClaim", &pvc));
    if (pvc == nullptr) return Status::Ok();
    std::string claim;
    VC_RETURN_IF_ERROR(Get(c, *pvc, vp.Field("persistentVolumeClaim"), "claimName", &claim));
    if (!claim.empty()) spec->mutable_rare().pvc_names.push_back(std::move(claim));
    return Status::Ok();
  }));
  VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "schedulingGates", [&](const json& o, const Path& gp) {
    std::string name;
    VC_RETURN_IF_ERROR(Get(c, o, gp, "name", &name));
    spec->mutable_rare().scheduling_gates.push_back(std::move(name));
    return Status::Ok();
  }));
  bool host_network = spec->host_network;  // a bit-field of the spec
  VC_RETURN_IF_ERROR(Get(c, s, p, "hostNetwork", &host_network));
  spec->host_network = host_network;
  return Status::Ok();
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
  // qosClass is not kept: k8s::PodQosClass computes it from the containers, as the API server did.
  VC_RETURN_IF_ERROR(Get(c, s, p, "nominatedNodeName", &st->nominated_node_name));
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
  Compact(pod);
  return Status::Ok();
}

// --------------------------------------------------------------------------------- Node

Status DecodeNodeBody(const Ctx& c, const json& j, Node* node) {
  // A Node without a spec still defaults its fields.
  VC_RETURN_IF_ERROR(DecodeSpecAndStatus(
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
        VC_RETURN_IF_ERROR(Get(c, s, p, "capacity", &st.capacity.mut()));
        VC_RETURN_IF_ERROR(Get(c, s, p, "allocatable", &st.allocatable.mut()));
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
      }));
  Compact(node);
  return Status::Ok();
}

// ------------------------------------------------------------------- network topology

Status Conv(const Ctx& c, const json& v, const Path& p, NetworkTopologySpec* out) {
  if (!v.is_object()) return TypeError(c, p, "object", v);
  VC_RETURN_IF_ERROR(Get(c, v, p, "mode", &out->mode));
  if (out->mode.empty()) out->mode = "hard";
  if (out->mode != "hard" && out->mode != "soft") {
    return c.Error(p.Field("mode"), fmt::format("\"{}\" is not one of hard, soft", out->mode));
  }
  VC_RETURN_IF_ERROR(Get(c, v, p, "highestTierAllowed", &out->highest_tier_allowed));
  if (out->highest_tier_allowed && *out->highest_tier_allowed < 0) {
    return c.Error(p.Field("highestTierAllowed"), "must be >= 0");
  }
  VC_RETURN_IF_ERROR(Get(c, v, p, "highestTierName", &out->highest_tier_name));
  if (out->highest_tier_allowed && !out->highest_tier_name.empty()) {
    return c.Error(p, "highestTierAllowed and highestTierName cannot be set simultaneously");
  }
  return Status::Ok();
}

// ----------------------------------------------------------------------------- PodGroup

Status DecodePodGroupBody(const Ctx& c, const json& j, PodGroup* pg) {
  return DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        PodGroupSpec& spec = pg->spec;
        VC_RETURN_IF_ERROR(Get(c, s, p, "minMember", &spec.min_member));
        // Read into locals: the rare block is made only for a group that sets one of them.
        std::map<std::string, int32_t, std::less<>> min_task_member;
        std::optional<NetworkTopologySpec> network_topology;
        std::vector<SubGroupPolicy> sub_group_policy;
        ResourceList min_resources;
        const json* mtm = nullptr;
        VC_RETURN_IF_ERROR(GetObject(c, s, p, "minTaskMember", &mtm));
        if (mtm != nullptr) {
          const Path mp = p.Field("minTaskMember");
          for (auto it = mtm->begin(); it != mtm->end(); ++it) {
            int32_t n = 0;
            if (!it->is_null()) VC_RETURN_IF_ERROR(Conv(c, *it, mp.Field(it.key()), &n));
            min_task_member.emplace(it.key(), n);
          }
        }
        VC_RETURN_IF_ERROR(Get(c, s, p, "queue", &spec.queue));
        VC_RETURN_IF_ERROR(Get(c, s, p, "priorityClassName", &spec.priority_class_name));
        VC_RETURN_IF_ERROR(Get(c, s, p, "networkTopology", &network_topology));
        VC_RETURN_IF_ERROR(ForEachObject(c, s, p, "subGroupPolicy", [&](const json& o, const Path& gp) {
          SubGroupPolicy g;
          VC_RETURN_IF_ERROR(Get(c, o, gp, "name", &g.name));
          VC_RETURN_IF_ERROR(Get(c, o, gp, "subGroupSize", &g.sub_group_size));
          if (g.sub_group_size < 1) return c.Error(gp.Field("subGroupSize"), "must be >= 1");
          VC_RETURN_IF_ERROR(Get(c, o, gp, "networkTopology", &g.network_topology));
          VC_RETURN_IF_ERROR(Get(c, o, gp, "labelSelector", &g.label_selector));
          if (const json* keys = Find(o, "matchLabelKeys")) {
            VC_RETURN_IF_ERROR(ConvStrings(c, *keys, gp.Field("matchLabelKeys"), &g.match_label_keys));
          }
          sub_group_policy.push_back(std::move(g));
          return Status::Ok();
        }));
        VC_RETURN_IF_ERROR(Get(c, s, p, "minResources", &min_resources));
        if (!min_task_member.empty() || network_topology || !sub_group_policy.empty() ||
            !min_resources.empty()) {
          PodGroupSpec::Rare& r = spec.mutable_rare();
          r.min_task_member = std::move(min_task_member);
          r.min_resources = std::move(min_resources);
          r.network_topology = std::move(network_topology);
          r.sub_group_policy = std::move(sub_group_policy);
        }
        return Status::Ok();
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

// ---------------------------------------------------------------------------- HyperNode

Status DecodeHyperNodeBody(const Ctx& c, const json& j, HyperNode* hn) {
  const Path root;
  const json* spec = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, j, root, "spec", &spec));
  const Path p = root.Field("spec");
  if (spec == nullptr) return c.Error(p, "missing required field");
  if (Find(*spec, "tier") == nullptr) return c.Error(p.Field("tier"), "missing required field");
  VC_RETURN_IF_ERROR(Get(c, *spec, p, "tier", &hn->spec.tier));
  if (hn->spec.tier < 0) return c.Error(p.Field("tier"), "must be >= 0");
  VC_RETURN_IF_ERROR(Get(c, *spec, p, "tierName", &hn->spec.tier_name));
  return ForEachObject(c, *spec, p, "members", [&](const json& o, const Path& mp) {
    HyperNodeMember m;
    std::string type;
    VC_RETURN_IF_ERROR(Get(c, o, mp, "type", &type));
    if (type == "Node") {
      m.type = HyperNodeMember::Type::kNode;
    } else if (type == "HyperNode") {
      m.type = HyperNodeMember::Type::kHyperNode;
    } else {
      return c.Error(mp.Field("type"), fmt::format("\"{}\" is not one of Node, HyperNode", type));
    }
    const json* sel = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, o, mp, "selector", &sel));
    const Path sp = mp.Field("selector");
    if (sel == nullptr) return c.Error(sp, "missing required field");
    const json* exact = nullptr;
    const json* regex = nullptr;
    const json* label = nullptr;
    VC_RETURN_IF_ERROR(GetObject(c, *sel, sp, "exactMatch", &exact));
    VC_RETURN_IF_ERROR(GetObject(c, *sel, sp, "regexMatch", &regex));
    VC_RETURN_IF_ERROR(GetObject(c, *sel, sp, "labelMatch", &label));
    const int n = (exact != nullptr) + (regex != nullptr) + (label != nullptr);
    if (n != 1) {
      return c.Error(sp, n == 0 ? "either exactMatch or regexMatch or labelMatch must be specified"
                                : "only one of exactMatch, regexMatch, or labelMatch can be specified");
    }
    if (exact != nullptr) {
      m.selector = HyperNodeMember::Selector::kExact;
      VC_RETURN_IF_ERROR(Get(c, *exact, sp.Field("exactMatch"), "name", &m.name_or_pattern));
      if (m.name_or_pattern.empty())
        return c.Error(sp.Field("exactMatch").Field("name"), "must not be empty");
    } else if (regex != nullptr) {
      m.selector = HyperNodeMember::Selector::kRegex;
      VC_RETURN_IF_ERROR(Get(c, *regex, sp.Field("regexMatch"), "pattern", &m.name_or_pattern));
      if (m.name_or_pattern.empty()) {
        return c.Error(sp.Field("regexMatch").Field("pattern"), "must not be empty");
      }
    } else {
      if (m.type != HyperNodeMember::Type::kNode) {
        return c.Error(sp.Field("labelMatch"), "labelMatch is only allowed for members of type Node");
      }
      m.selector = HyperNodeMember::Selector::kLabel;
      VC_RETURN_IF_ERROR(Conv(c, *label, sp.Field("labelMatch"), &m.labels));
    }
    hn->spec.members.push_back(std::move(m));
    return Status::Ok();
  });
}

// ------------------------------------------- PersistentVolumeClaim, PersistentVolume, StorageClass
//
// What kube-scheduler's VolumeBinding and VolumeZone filters read. Fields the API server
// would refuse are refused here too where the filters depend on them (a PV's node affinity,
// a StorageClass's volumeBindingMode); the rest is read as given.

constexpr std::string_view kBetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class";

// The beta annotation, when present (even ""): it takes precedence over spec.storageClassName,
// as in kube's GetPersistentVolumeClaimClass and GetPersistentVolumeClass.
std::optional<std::string> BetaStorageClass(const ObjectMeta& meta) {
  auto it = meta.annotations.find(kBetaStorageClassAnnotation);
  if (it == meta.annotations.end()) return std::nullopt;
  return it->second.str();
}

Status DecodePersistentVolumeClaimBody(const Ctx& c, const json& j, PersistentVolumeClaim* pvc) {
  VC_RETURN_IF_ERROR(DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        VC_RETURN_IF_ERROR(Get(c, s, p, "volumeName", &pvc->volume_name));
        return Get(c, s, p, "storageClassName", &pvc->storage_class_name);
      },
      [&](const json& s, const Path& p) { return Get(c, s, p, "phase", &pvc->phase); }));
  if (auto beta = BetaStorageClass(pvc->metadata)) pvc->storage_class_name = std::move(beta);
  return Status::Ok();
}

// spec.nodeAffinity.required.nodeSelectorTerms, each term as a pod's required node affinity
// reads it (the same operators and Gt/Lt rules). A nodeAffinity without `required` constrains
// nothing (kube's CheckNodeAffinity); `required` with no terms matches no node.
Status DecodeVolumeNodeAffinity(const Ctx& c, const json& na, const Path& p,
                                std::optional<std::vector<NodeSelectorTerm>>* out) {
  const json* required = nullptr;
  VC_RETURN_IF_ERROR(GetObject(c, na, p, "required", &required));
  if (required == nullptr) return Status::Ok();
  std::vector<NodeSelectorTerm> terms;
  VC_RETURN_IF_ERROR(ForEachObject(c, *required, p.Field("required"), "nodeSelectorTerms",
                                   [&](const json& o, const Path& tp) {
                                     NodeSelectorTerm t;
                                     VC_RETURN_IF_ERROR(ConvNodeSelectorTerm(c, o, tp, &t));
                                     terms.push_back(std::move(t));
                                     return Status::Ok();
                                   }));
  *out = std::move(terms);
  return Status::Ok();
}

Status DecodePersistentVolumeBody(const Ctx& c, const json& j, PersistentVolume* pv) {
  VC_RETURN_IF_ERROR(DecodeSpecAndStatus(
      c, j,
      [&](const json& s, const Path& p) {
        VC_RETURN_IF_ERROR(Get(c, s, p, "storageClassName", &pv->storage_class_name));
        const json* na = nullptr;
        VC_RETURN_IF_ERROR(GetObject(c, s, p, "nodeAffinity", &na));
        if (na == nullptr) return Status::Ok();
        return DecodeVolumeNodeAffinity(c, *na, p.Field("nodeAffinity"), &pv->node_affinity);
      },
      [&](const json& s, const Path& p) { return Get(c, s, p, "phase", &pv->phase); }));
  if (auto beta = BetaStorageClass(pv->metadata)) pv->storage_class_name = std::move(*beta);
  return Status::Ok();
}

// volumeBindingMode: absent or null is Immediate (the API server's default); anything but
// Immediate and WaitForFirstConsumer (even "") is refused, as the API server refuses it.
Status DecodeStorageClassBody(const Ctx& c, const json& j, StorageClass* sc) {
  const Path root;
  VC_RETURN_IF_ERROR(Get(c, j, root, "provisioner", &sc->provisioner));
  VC_RETURN_IF_ERROR(Get(c, j, root, "volumeBindingMode", &sc->volume_binding_mode));
  if (sc->volume_binding_mode != "Immediate" && sc->volume_binding_mode != "WaitForFirstConsumer") {
    return c.Error(
        root.Field("volumeBindingMode"),
        fmt::format("\"{}\" is not one of Immediate, WaitForFirstConsumer", sc->volume_binding_mode));
  }
  return Status::Ok();
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

enum class KindId : uint8_t {
  kPod,
  kNode,
  kPodGroup,
  kQueue,
  kPriorityClass,
  kResourceQuota,
  kHyperNode,
  kPersistentVolumeClaim,
  kPersistentVolume,
  kStorageClass,
  kOther
};

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
      {"HyperNode", "topology.volcano.sh", {"v1alpha1"}, KindId::kHyperNode},
      {"PersistentVolumeClaim", "", {"v1"}, KindId::kPersistentVolumeClaim},
      {"PersistentVolume", "", {"v1"}, KindId::kPersistentVolume},
      {"StorageClass", "storage.k8s.io", {"v1", "v1beta1"}, KindId::kStorageClass},
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

}  // namespace

namespace decode_internal {

bool LooksLikeList(const json& j) {
  if (!j.is_object()) return false;
  const std::string_view kind = PeekString(j, "kind");
  if (!EndsWith(kind, "List")) return false;
  auto it = j.find("items");
  return it != j.end() && (it->is_array() || it->is_null());
}

}  // namespace decode_internal

namespace {

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

}  // namespace

namespace decode_internal {

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
    case KindId::kHyperNode:
      c.kind = "HyperNode";
      return DecodeTyped<HyperNode>(c, j, *meta, DecodeHyperNodeBody);
    case KindId::kPersistentVolumeClaim:
      c.kind = "PersistentVolumeClaim";
      return DecodeTyped<PersistentVolumeClaim>(c, j, *meta, DecodePersistentVolumeClaimBody);
    case KindId::kPersistentVolume:
      c.kind = "PersistentVolume";
      return DecodeTyped<PersistentVolume>(c, j, *meta, DecodePersistentVolumeBody);
    case KindId::kStorageClass:
      c.kind = "StorageClass";
      return DecodeTyped<StorageClass>(c, j, *meta, DecodeStorageClassBody);
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

}  // namespace decode_internal

namespace {

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

}  // namespace

namespace decode_internal {

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

}  // namespace decode_internal

// ----------------------------------------------------------------------- public functions

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

}  // namespace volcache::k8s
