#include "session/constraints.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "api/placement.h"
#include "api/task_status.h"

namespace volcache {

namespace {

// Canonical texts: two terms (or constraints) with the same text count the same pods.
void CanonSelector(const std::optional<k8s::LabelSelector>& s, std::string* out) {
  if (!s) {
    out->append("~");
    return;
  }
  out->append("{");
  for (const auto& [k, v] : s->match_labels) {
    out->append(k).append("=").append(v).append(",");
  }
  out->append(";");
  for (const auto& r : s->match_expressions) {
    out->append(r.key).append(" ").append(r.op);
    for (const auto& v : r.values) out->append(" ").append(v);
    out->append(",");
  }
  out->append("}");
}

void CanonTerm(const k8s::PodAffinityTerm& t, std::string_view owner_ns, std::string* out) {
  if (t.namespaces.empty() && !t.namespace_selector) {
    out->append("ns:").append(owner_ns);
  } else {
    std::vector<std::string> ns(t.namespaces.begin(), t.namespaces.end());
    std::sort(ns.begin(), ns.end());
    out->append("nss:");
    for (const auto& n : ns) out->append(n).append(",");
    CanonSelector(t.namespace_selector, out);
  }
  out->append("|");
  CanonSelector(t.label_selector, out);
  out->append("|").append(t.topology_key).append("\n");
}

void CanonRequirements(const std::vector<k8s::NodeSelectorRequirement>& rs, std::string* out) {
  for (const auto& r : rs) {
    out->append(r.key).append(" ").append(r.op);
    for (const auto& v : r.values) out->append(" ").append(v);
    out->append(",");
  }
}

// What decides which nodes a spread constraint counts over for this task.
void CanonEligibility(const k8s::TopologySpreadConstraint& c, const k8s::PodSpec& spec,
                      const std::vector<const k8s::TopologySpreadConstraint*>& all, std::string* out) {
  for (const auto* o : all) out->append(o->topology_key).append(",");
  out->append("|");
  if (c.node_affinity_policy != "Ignore") AppendNodeAffinityKey(spec, out);
  out->append("|");
  if (c.node_taints_policy == "Honor") {
    for (const auto& t : spec.tolerations) {
      out->append(t.key).append(" ").append(t.operator_).append(" ").append(t.value).append(" ");
      out->append(t.effect).append(",");
    }
  }
}

bool Terminating(const k8s::Pod& p) { return p.metadata.deletion_timestamp.has_value(); }

}  // namespace

void AppendNodeAffinityKey(const k8s::PodSpec& spec, std::string* out) {
  for (const auto& [k, v] : spec.node_selector) out->append(k).append("=").append(v).append(",");
  if (const auto& req = spec.node_affinity().required) {
    for (const auto& term : *req) {
      out->append("(");
      CanonRequirements(term.match_expressions, out);
      out->append(";");
      CanonRequirements(term.match_fields, out);
      out->append(")");
    }
  }
}

struct Constraints::Topo {
  std::vector<int32_t> value_of;  // per node; -1 when the node lacks the key
  int32_t values = 0;
};

// Pods matching a term (or, for required affinity, every term of the task), per value of the
// terms' topology keys.
struct Constraints::Counter {
  std::vector<const k8s::PodAffinityTerm*> terms;
  std::string owner_ns;
  std::vector<Topo*> topos;                  // per term
  std::vector<std::vector<int32_t>> counts;  // per term, per value
  int64_t matched = 0;                       // pods counted under some term's key
  bool Matches(const k8s::Pod& p) const {
    for (const auto* t : terms) {
      if (!placement::TermMatchesPod(*t, owner_ns, p)) return false;
    }
    return !terms.empty();
  }
  void Add(uint32_t node, int delta) {
    bool any = false;
    for (size_t i = 0; i < terms.size(); ++i) {
      const int32_t v = topos[i]->value_of[node];
      if (v < 0) continue;
      counts[i][static_cast<size_t>(v)] += delta;
      any = true;
    }
    if (any) matched += delta;
  }
};

// Pods holding one required anti-affinity term, per value of its topology key.
struct Constraints::Holder {
  const k8s::PodAffinityTerm* term = nullptr;
  std::string owner_ns;
  Topo* topo = nullptr;
  std::vector<int32_t> counts;
  int64_t total = 0;
};

// Pods matching one spread constraint, over the nodes it counts (eligible), per domain.
struct Constraints::Spread {
  const k8s::TopologySpreadConstraint* c = nullptr;
  std::string ns;
  Topo* topo = nullptr;
  std::vector<uint8_t> eligible;  // per node
  std::vector<int32_t> counts;    // per value
  std::vector<uint8_t> domain;    // per value: some eligible node has it
  int32_t domains = 0;
  bool Matches(const k8s::Pod& p) const {
    return p.metadata.namespace_ == ns && !Terminating(p) &&
           placement::SelectorMatches(c->label_selector, p.metadata.labels);
  }
};

Constraints::Constraints(std::vector<const NodeInfo*> nodes, const VolumeInfo* volumes)
    : nodes_(std::move(nodes)), volumes_(volumes) {}
Constraints::~Constraints() = default;

Constraints::Topo& Constraints::TopoFor(const std::string& key) {
  auto it = topos_.find(key);
  if (it != topos_.end()) return *it->second;
  auto topo = std::make_unique<Topo>();
  topo->value_of.assign(nodes_.size(), -1);
  std::unordered_map<std::string_view, int32_t> ids;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const k8s::Node* node = nodes_[i]->node().get();
    if (node == nullptr) continue;
    auto l = node->metadata.labels.find(key);
    if (l == node->metadata.labels.end()) continue;
    auto [id, inserted] = ids.try_emplace(std::string_view(l->second), topo->values);
    if (inserted) ++topo->values;
    topo->value_of[i] = id->second;
  }
  return *topos_.emplace(key, std::move(topo)).first->second;
}

void Constraints::BuildPodIndex() {
  if (pods_built_) return;
  pods_built_ = true;
  std::string key;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (const auto& [_, t] : nodes_[i]->tasks()) {
      if (t.status == TaskStatus::kPipelined) continue;
      const auto pos = static_cast<uint32_t>(pods_.size());
      pods_.push_back({&t.pod(), static_cast<uint32_t>(i)});
      for (const auto& [k, v] : t.pod().metadata.labels) {
        key.assign(k).append("\x1f").append(v);
        label_index_[key].push_back(pos);
      }
    }
  }
}

template <class Fn>
void Constraints::ForCandidates(const std::optional<k8s::LabelSelector>& selector, Fn&& fn) {
  if (!selector) return;  // selects nothing
  BuildPodIndex();
  std::string key;
  auto each = [&](const std::string& k) {
    if (auto it = label_index_.find(k); it != label_index_.end()) {
      for (uint32_t i : it->second) fn(pods_[i]);
    }
  };
  if (!selector->match_labels.empty()) {
    const auto& [k, v] = *selector->match_labels.begin();
    each(key.assign(k).append("\x1f").append(v));
    return;
  }
  for (const auto& r : selector->match_expressions) {
    if (r.op != "In") continue;
    std::vector<std::string> values(r.values.begin(), r.values.end());
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (const auto& v : values) each(key.assign(r.key).append("\x1f").append(v));
    return;
  }
  for (const PodAt& p : pods_) fn(p);
}

Constraints::Counter& Constraints::CounterFor(std::vector<const k8s::PodAffinityTerm*> terms,
                                              std::string_view owner_ns, bool all) {
  std::string key(all ? "all\n" : "one\n");
  for (const auto* t : terms) CanonTerm(*t, owner_ns, &key);
  auto it = counters_.find(key);
  if (it != counters_.end()) return *it->second;
  auto c = std::make_unique<Counter>();
  c->terms = std::move(terms);
  c->owner_ns = std::string(owner_ns);
  for (const auto* t : c->terms) {
    Topo& topo = TopoFor(t->topology_key);
    c->topos.push_back(&topo);
    c->counts.emplace_back(static_cast<size_t>(topo.values), 0);
  }
  Counter& ref = *c;
  if (!ref.terms.empty()) {
    ForCandidates(ref.terms.front()->label_selector, [&](const PodAt& p) {
      if (ref.Matches(*p.pod)) ref.Add(p.node, +1);
    });
    for (const auto& [t, node] : log_) {  // this session's placements so far
      if (ref.Matches(t->pod())) ref.Add(node, +1);
    }
  }
  counter_list_.push_back(&ref);
  counters_.emplace(std::move(key), std::move(c));
  return ref;
}

Constraints::Spread& Constraints::SpreadFor(const k8s::TopologySpreadConstraint& c, const TaskInfo& task,
                                            const std::vector<const k8s::TopologySpreadConstraint*>& all) {
  const k8s::Pod& pod = task.pod();
  std::string key;
  key.append(pod.metadata.namespace_).append("|").append(c.topology_key).append("|");
  CanonSelector(c.label_selector, &key);
  key.append("|").append(c.node_affinity_policy).append("|").append(c.node_taints_policy).append("|");
  CanonEligibility(c, pod.spec, all, &key);
  auto it = spreads_.find(key);
  if (it != spreads_.end()) return *it->second;
  auto s = std::make_unique<Spread>();
  s->c = &c;
  s->ns = std::string(pod.metadata.namespace_);
  s->topo = &TopoFor(c.topology_key);
  s->eligible.assign(nodes_.size(), 0);
  s->counts.assign(static_cast<size_t>(s->topo->values), 0);
  s->domain.assign(static_cast<size_t>(s->topo->values), 0);
  std::vector<Topo*> keys;
  for (const auto* o : all) keys.push_back(&TopoFor(o->topology_key));
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const k8s::Node* node = nodes_[i]->node().get();
    if (node == nullptr) continue;
    bool ok = true;
    for (const Topo* t : keys) ok = ok && t->value_of[i] >= 0;
    if (ok && c.node_affinity_policy != "Ignore") ok = placement::MatchesNodeAffinity(pod.spec, *node);
    if (ok && c.node_taints_policy == "Honor")
      ok = placement::FirstUntoleratedTaint(pod.spec.tolerations, *node) == nullptr;
    if (!ok) continue;
    s->eligible[i] = 1;
    const auto v = static_cast<size_t>(s->topo->value_of[i]);
    if (!s->domain[v]) {
      s->domain[v] = 1;
      ++s->domains;
    }
  }
  Spread& ref = *s;
  auto add = [&ref](const k8s::Pod& p, uint32_t node) {
    if (ref.eligible[node] && ref.Matches(p)) ++ref.counts[static_cast<size_t>(ref.topo->value_of[node])];
  };
  ForCandidates(c.label_selector, [&](const PodAt& p) { add(*p.pod, p.node); });
  for (const auto& [t, node] : log_) add(t->pod(), node);
  spread_list_.push_back(&ref);
  spreads_.emplace(std::move(key), std::move(s));
  return ref;
}

void Constraints::AddHolders(const k8s::Pod& pod, uint32_t node, int delta) {
  std::string key;
  for (const auto& term : pod.spec.pod_anti_affinity().required) {
    key.clear();
    CanonTerm(term, pod.metadata.namespace_, &key);
    auto it = holders_.find(key);
    if (it == holders_.end()) {
      auto h = std::make_unique<Holder>();
      h->term = &term;
      h->owner_ns = std::string(pod.metadata.namespace_);
      h->topo = &TopoFor(term.topology_key);
      h->counts.assign(static_cast<size_t>(h->topo->values), 0);
      holder_list_.push_back(h.get());
      it = holders_.emplace(key, std::move(h)).first;
    }
    Holder& h = *it->second;
    const int32_t v = h.topo->value_of[node];
    if (v < 0) continue;
    h.counts[static_cast<size_t>(v)] += delta;
    h.total += delta;
  }
}

void Constraints::BuildHolders() {
  if (holders_built_) return;
  holders_built_ = true;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->pods_with_required_anti_affinity() == 0) continue;
    for (const auto& [_, t] : nodes_[i]->tasks()) {
      if (t.status == TaskStatus::kPipelined) continue;
      if (!t.pod().spec.pod_anti_affinity().required.empty())
        AddHolders(t.pod(), static_cast<uint32_t>(i), +1);
    }
  }
  for (const auto& [t, node] : log_) {
    if (!t->pod().spec.pod_anti_affinity().required.empty()) AddHolders(t->pod(), node, +1);
  }
}

bool Constraints::Prepare(const TaskInfo& task) {
  pod_reason_.clear();
  bound_volumes_.clear();
  ports_.clear();
  affinity_ = nullptr;
  affinity_first_ok_ = false;
  anti_.clear();
  holders_on_.clear();
  hard_spread_.clear();
  preferred_.clear();
  soft_spread_.clear();
  const k8s::Pod& pod = task.pod();
  const k8s::PodSpec& spec = pod.spec;
  if (!task.meta->host_ports().empty()) ports_ = placement::WantedHostPorts(spec);
  if (const std::vector<std::string>& claims = task.meta->pvcs(); !claims.empty()) {
    static const VolumeInfo kNoVolumes;
    pod_reason_ =
        placement::ResolveClaims(claims, volumes_ != nullptr ? *volumes_ : kNoVolumes, &bound_volumes_);
  }
  if (spec.rare) {
    const std::string_view ns = pod.metadata.namespace_;
    if (const auto& req = spec.pod_affinity().required; !req.empty()) {
      std::vector<const k8s::PodAffinityTerm*> terms;
      for (const auto& t : req) terms.push_back(&t);
      affinity_ = &CounterFor(terms, ns, true);
      affinity_first_ok_ = affinity_->matched == 0 && affinity_->Matches(pod);
    }
    for (const auto& t : spec.pod_anti_affinity().required) anti_.push_back(&CounterFor({&t}, ns, false));
    for (const auto& w : spec.pod_affinity().preferred) {
      if (w.weight != 0) preferred_.push_back({&CounterFor({&w.term}, ns, false), w.weight});
    }
    for (const auto& w : spec.pod_anti_affinity().preferred) {
      if (w.weight != 0) preferred_.push_back({&CounterFor({&w.term}, ns, false), -int64_t{w.weight}});
    }
    std::vector<const k8s::TopologySpreadConstraint*> hard, soft;
    for (const auto& c : spec.topology_spread_constraints())
      (c.when_unsatisfiable == "ScheduleAnyway" ? soft : hard).push_back(&c);
    for (const auto* c : hard) {
      Spread& s = SpreadFor(*c, task, hard);
      int64_t min = 0;
      bool first = true;
      for (size_t v = 0; v < s.domain.size(); ++v) {
        if (!s.domain[v]) continue;
        if (first || s.counts[v] < min) min = s.counts[v];
        first = false;
      }
      if (c->min_domains && s.domains < *c->min_domains) min = 0;
      const int32_t self = placement::SelectorMatches(c->label_selector, pod.metadata.labels) ? 1 : 0;
      hard_spread_.push_back({&s, c->max_skew, min, self});
    }
    for (const auto* c : soft) {
      Spread& s = SpreadFor(*c, task, soft);
      soft_spread_.push_back({&s, std::log(static_cast<double>(s.domains) + 2)});
    }
  }
  BuildHolders();
  for (Holder* h : holder_list_) {
    if (h->total > 0 && placement::TermMatchesPod(*h->term, h->owner_ns, pod)) holders_on_.push_back(h);
  }
  return !pod_reason_.empty() || !bound_volumes_.empty() || !ports_.empty() || affinity_ != nullptr ||
         !anti_.empty() || !holders_on_.empty() || !hard_spread_.empty() || !preferred_.empty() ||
         !soft_spread_.empty();
}

bool Constraints::MayConstrain(const TaskInfo& task) {
  BuildHolders();
  if (!holder_list_.empty() || !task.meta->host_ports().empty() || !task.meta->pvcs().empty()) return true;
  const k8s::PodSpec& spec = task.pod().spec;
  return spec.rare &&
         (!spec.pod_affinity().required.empty() || !spec.pod_affinity().preferred.empty() ||
          !spec.pod_anti_affinity().required.empty() || !spec.pod_anti_affinity().preferred.empty() ||
          !spec.topology_spread_constraints().empty());
}

std::string_view Constraints::CheckPorts(uint32_t node) const {
  if (ports_.empty()) return {};
  for (const HostPort& want : ports_) {
    for (const auto& [used, n] : nodes_[node]->used_ports()) {
      if (n > 0 && placement::HostPortsConflict(want, used)) return placement::kReasonNodePorts;
    }
    if (node < session_ports_.size()) {
      for (const HostPort& used : session_ports_[node]) {
        if (placement::HostPortsConflict(want, used)) return placement::kReasonNodePorts;
      }
    }
  }
  return {};
}

std::string_view Constraints::CheckPods(uint32_t node) const {
  if (!bound_volumes_.empty()) {
    if (const k8s::Node* n = nodes_[node]->node().get()) {
      if (std::string_view why = placement::VolumeNodeConflict(bound_volumes_, *n); !why.empty()) return why;
    }
  }
  for (const HardSpread& hs : hard_spread_) {
    const int32_t v = hs.s->topo->value_of[node];
    if (v < 0) return placement::kReasonSpreadLabel;
    const int64_t skew = hs.s->counts[static_cast<size_t>(v)] + hs.self - hs.min;
    if (skew > hs.max_skew) return placement::kReasonSpread;
  }
  if (affinity_ != nullptr) {
    bool exist = true;
    for (size_t i = 0; i < affinity_->terms.size(); ++i) {
      const int32_t v = affinity_->topos[i]->value_of[node];
      if (v < 0) return placement::kReasonPodAffinity;  // every topology label must exist
      if (affinity_->counts[i][static_cast<size_t>(v)] <= 0) exist = false;
    }
    if (!exist && !affinity_first_ok_) return placement::kReasonPodAffinity;
  }
  for (const Counter* c : anti_) {
    const int32_t v = c->topos[0]->value_of[node];
    if (v >= 0 && c->counts[0][static_cast<size_t>(v)] > 0) return placement::kReasonPodAntiAffinity;
  }
  for (const Holder* h : holders_on_) {
    const int32_t v = h->topo->value_of[node];
    if (v >= 0 && h->counts[static_cast<size_t>(v)] > 0) return placement::kReasonExistingAntiAffinity;
  }
  return {};
}

int64_t Constraints::InterPodScore(uint32_t node) const {
  int64_t score = 0;
  for (const Preferred& p : preferred_) {
    const int32_t v = p.c->topos[0]->value_of[node];
    if (v >= 0) score += p.weight * p.c->counts[0][static_cast<size_t>(v)];
  }
  return score;
}

double Constraints::SpreadScore(uint32_t node) const {
  double score = 0;
  for (const SoftSpread& s : soft_spread_) {
    const int32_t v = s.s->topo->value_of[node];
    if (v < 0) return -1;
    score += static_cast<double>(s.s->counts[static_cast<size_t>(v)]) * s.weight +
             static_cast<double>(s.s->c->max_skew - 1);
  }
  return score;
}

void Constraints::Count(const k8s::Pod& pod, uint32_t node, int delta) {
  for (Counter* c : counter_list_) {
    if (c->Matches(pod)) c->Add(node, delta);
  }
  for (Spread* s : spread_list_) {
    if (s->eligible[node] && s->Matches(pod))
      s->counts[static_cast<size_t>(s->topo->value_of[node])] += delta;
  }
}

void Constraints::Place(const TaskInfo& task, uint32_t node) {
  log_.emplace_back(&task, node);
  const k8s::Pod& pod = task.pod();
  if (!task.meta->host_ports().empty()) {
    if (session_ports_.size() < nodes_.size()) session_ports_.resize(nodes_.size());
    for (HostPort& p : placement::WantedHostPorts(pod.spec)) session_ports_[node].push_back(std::move(p));
  }
  Count(pod, node, +1);
  if (holders_built_ && !pod.spec.pod_anti_affinity().required.empty()) AddHolders(pod, node, +1);
}

void Constraints::Rollback(size_t mark) {
  while (log_.size() > mark) {
    const auto [task, node] = log_.back();
    log_.pop_back();
    const k8s::Pod& pod = task->pod();
    if (!task->meta->host_ports().empty()) {
      auto& ports = session_ports_[node];
      for (const HostPort& p : placement::WantedHostPorts(pod.spec)) {
        auto it = std::find(ports.begin(), ports.end(), p);
        if (it != ports.end()) ports.erase(it);
      }
    }
    Count(pod, node, -1);
    if (holders_built_ && !pod.spec.pod_anti_affinity().required.empty()) AddHolders(pod, node, -1);
  }
}

}  // namespace volcache
