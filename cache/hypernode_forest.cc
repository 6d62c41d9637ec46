#include "cache/hypernode_forest.h"

#include <re2/re2.h>

#include <algorithm>

namespace volcache {

namespace {

using Member = k8s::HyperNodeMember;

// A member with its regex compiled once.
struct Compiled {
  const Member* member;
  std::shared_ptr<const re2::RE2> re;  // regexMatch only
};

std::string MemberPath(size_t i) { return "spec.members[" + std::to_string(i) + "].selector"; }

}  // namespace

struct HyperNodeForest::Entry {
  k8s::HyperNodePtr obj;
  std::vector<Compiled> members;
  std::string parent;  // "" for a root
  std::set<std::string> children;
  std::unordered_set<std::string> own;              // nodes it selects itself
  std::unordered_map<std::string, int32_t> leaves;  // node → contributions (own + children holding it)
};

HyperNodeForest::HyperNodeForest() = default;
HyperNodeForest::~HyperNodeForest() = default;

HyperNodeForest::Entry* HyperNodeForest::Find(const std::string& name) {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.get();
}

std::vector<std::string> HyperNodeForest::ClaimersOf(const std::string& name,
                                                     const std::string& except) const {
  std::set<std::string> out;
  if (auto it = exact_claims_.find(name); it != exact_claims_.end()) out = it->second;
  for (const std::string& r : regex_claimers_) {
    const Entry& e = *entries_.at(r);
    for (const Compiled& c : e.members) {
      if (c.member->type == Member::Type::kHyperNode && c.re && re2::RE2::PartialMatch(name, *c.re)) {
        out.insert(r);
      }
    }
  }
  out.erase(except);
  out.erase(name);  // a HyperNode selecting itself is refused when it is applied
  return {out.begin(), out.end()};
}

namespace {
bool MemberSelects(const Compiled& c, const std::string& node, const k8s::StringMap& labels) {
  const Member& m = *c.member;
  if (m.type != Member::Type::kNode) return false;
  switch (m.selector) {
    case Member::Selector::kExact:
      return m.name_or_pattern == node;
    case Member::Selector::kRegex:
      return re2::RE2::PartialMatch(node, *c.re);
    case Member::Selector::kLabel:
      return k8s::LabelSelectorMatches(m.labels, labels);
  }
  return false;
}
}  // namespace

bool HyperNodeForest::MemberSelectsNode(const Entry& e, const std::string& node,
                                        const k8s::StringMap& labels) const {
  for (const Compiled& c : e.members) {
    if (MemberSelects(c, node, labels)) return true;
  }
  return false;
}

void HyperNodeForest::Inc(Entry* e, const std::string& node) {
  while (e != nullptr) {
    if (++e->leaves[node] > 1) return;  // already a leaf here, so in every ancestor too
    e = e->parent.empty() ? nullptr : Find(e->parent);
  }
}

void HyperNodeForest::Dec(Entry* e, const std::string& node) {
  while (e != nullptr) {
    auto it = e->leaves.find(node);
    if (--it->second > 0) return;
    e->leaves.erase(it);
    e = e->parent.empty() ? nullptr : Find(e->parent);
  }
}

void HyperNodeForest::Index(const std::string& name, const Entry& e) {
  for (const Compiled& c : e.members) {
    const Member& m = *c.member;
    if (m.type == Member::Type::kHyperNode) {
      if (m.selector == Member::Selector::kExact) {
        exact_claims_[m.name_or_pattern].insert(name);
      } else {
        regex_claimers_.insert(name);
      }
    } else if (m.selector == Member::Selector::kExact) {
      exact_node_index_[m.name_or_pattern].insert(name);
    } else if (m.selector == Member::Selector::kLabel && !m.labels.match_labels.empty()) {
      const auto& [k, v] = *m.labels.match_labels.begin();
      auto [byk, new_key] = label_index_.try_emplace(k);
      byk->second[v].insert(name);
      if (new_key) IndexNodeLabel(k);
    } else {
      scan_hns_.insert(name);
    }
  }
}

void HyperNodeForest::IndexNodeLabel(const std::string& key) {
  auto& by_value = node_labels_[key];
  for (const auto& [node, labels] : nodes_) {
    auto l = labels.find(key);
    if (l != labels.end()) by_value[l->second].insert(node.str());
  }
}

void HyperNodeForest::Unindex(const std::string& name, const Entry& e) {
  auto erase_from = [&](auto& map, const std::string& key) {
    auto it = map.find(key);
    if (it == map.end()) return;
    it->second.erase(name);
    if (it->second.empty()) map.erase(it);
  };
  for (const Compiled& c : e.members) {
    const Member& m = *c.member;
    if (m.type == Member::Type::kHyperNode) {
      if (m.selector == Member::Selector::kExact) {
        erase_from(exact_claims_, m.name_or_pattern);
      } else {
        regex_claimers_.erase(name);
      }
    } else if (m.selector == Member::Selector::kExact) {
      erase_from(exact_node_index_, m.name_or_pattern);
    } else if (m.selector == Member::Selector::kLabel && !m.labels.match_labels.empty()) {
      const auto& [k, v] = *m.labels.match_labels.begin();
      auto it = label_index_.find(k);
      if (it != label_index_.end()) {
        erase_from(it->second, v);
        if (it->second.empty()) {
          label_index_.erase(it);
          node_labels_.erase(k);  // no labelMatch looks this key up any more
        }
      }
    } else {
      scan_hns_.erase(name);
    }
  }
}

Status HyperNodeForest::Apply(const k8s::HyperNodePtr& hn) {
  const std::string& name = hn->metadata.name;
  const std::string what = "HyperNode " + name;
  // 1. Compile (nothing written yet).
  std::vector<Compiled> members;
  members.reserve(hn->spec.members.size());
  for (size_t i = 0; i < hn->spec.members.size(); ++i) {
    const Member& m = hn->spec.members[i];
    Compiled c{&m, nullptr};
    if (m.selector == Member::Selector::kRegex) {
      auto re = std::make_shared<re2::RE2>(m.name_or_pattern, re2::RE2::Quiet);
      if (!re->ok()) {
        return Status::InvalidArgument(what + ": " + MemberPath(i) + ".regexMatch.pattern: invalid regex \"" +
                                       m.name_or_pattern + "\": " + re->error());
      }
      c.re = std::move(re);
    }
    members.push_back(std::move(c));
  }
  // 2. The new children, each checked for another parent.
  auto refuse = [&](std::string msg) {
    refused_[name] = msg;
    return Status::InvalidArgument(std::move(msg));
  };
  std::set<std::string> children;
  for (const Compiled& c : members) {
    const Member& m = *c.member;
    if (m.type != Member::Type::kHyperNode) continue;
    if (m.selector == Member::Selector::kExact) {
      if (m.name_or_pattern == name)
        return refuse(what + ": member HyperNode " + name + " is itself (cycle)");
      for (const std::string& other : ClaimersOf(m.name_or_pattern, name)) {
        return refuse(what + ": member HyperNode " + m.name_or_pattern + " already has parent HyperNode " +
                      other);
      }
      if (entries_.count(m.name_or_pattern)) children.insert(m.name_or_pattern);
    } else {
      for (const auto& [other_name, _] : entries_) {
        if (other_name != name && re2::RE2::PartialMatch(other_name, *c.re)) children.insert(other_name);
      }
    }
  }
  for (const std::string& child : children) {
    for (const std::string& other : ClaimersOf(child, name)) {
      return refuse(what + ": member HyperNode " + child + " already has parent HyperNode " + other);
    }
  }
  // 3. Its parent, and no cycle through it.
  std::vector<std::string> parents = ClaimersOf(name, name);
  if (parents.size() > 1) {
    return refuse(what + ": selected as a member by both HyperNode " + parents[0] + " and HyperNode " +
                  parents[1]);
  }
  const std::string parent = parents.empty() ? std::string() : parents[0];
  for (const Entry* a = parent.empty() ? nullptr : entries_.at(parent).get(); a != nullptr;) {
    const std::string& aname = a->obj->metadata.name;
    if (aname == name || children.count(aname)) {
      return refuse(what + ": member HyperNode " + aname + " is an ancestor of HyperNode " + name +
                    " (cycle)");
    }
    a = a->parent.empty() ? nullptr : entries_.at(a->parent).get();
  }

  // 4. Commit.
  Entry* e = Find(name);
  const bool created = e == nullptr;
  if (created) {
    e = entries_.emplace(name, std::make_unique<Entry>()).first->second.get();
  } else {
    Unindex(name, *e);
  }
  auto old_obj = e->obj;  // keeps the old members' selectors alive until they are replaced
  e->obj = hn;
  e->members = std::move(members);
  Index(name, *e);
  // Children that left, then own matches, then children that joined.
  for (auto it = e->children.begin(); it != e->children.end();) {
    if (children.count(*it)) {
      ++it;
      continue;
    }
    Entry* c = Find(*it);
    for (const auto& [node, _] : c->leaves) Dec(e, node);
    c->parent.clear();
    it = e->children.erase(it);
  }
  // Its own matches: exact names and the first matchLabels pair through the indexes; only
  // regex and expression-only members scan every node.
  std::unordered_set<std::string> own;
  for (const Compiled& c : e->members) {
    const Member& m = *c.member;
    if (m.type != Member::Type::kNode) continue;
    if (m.selector == Member::Selector::kExact) {
      // Interns the member's name if no node had it: HyperNode specs name few.
      if (nodes_.count(k8s::Interned(m.name_or_pattern))) own.insert(m.name_or_pattern);
    } else if (m.selector == Member::Selector::kLabel && !m.labels.match_labels.empty()) {
      const auto& [k, v] = *m.labels.match_labels.begin();
      auto byk = node_labels_.find(k);
      if (byk == node_labels_.end()) continue;
      auto byv = byk->second.find(v);
      if (byv == byk->second.end()) continue;
      for (const std::string& node : byv->second) {
        if (MemberSelects(c, node, nodes_.at(k8s::Interned(node)))) own.insert(node);
      }
    } else {
      for (const auto& [node, labels] : nodes_) {
        if (MemberSelects(c, node, labels)) own.insert(node.str());
      }
    }
  }
  for (auto it = e->own.begin(); it != e->own.end();) {
    if (own.count(*it)) {
      ++it;
      continue;
    }
    const std::string node = *it;
    it = e->own.erase(it);
    auto o = owners_.find(node);
    o->second.erase(name);
    if (o->second.empty()) owners_.erase(o);
    Dec(e, node);
  }
  for (const std::string& node : own) {
    if (e->own.insert(node).second) {
      owners_[node].insert(name);
      Inc(e, node);
    }
  }
  for (const std::string& child : children) {
    if (!e->children.insert(child).second) continue;
    Entry* c = Find(child);
    c->parent = name;
    for (const auto& [node, _] : c->leaves) Inc(e, node);
  }
  if (created && !parent.empty()) {
    Entry* p = Find(parent);
    p->children.insert(name);
    e->parent = parent;
    for (const auto& [node, _] : e->leaves) Inc(p, node);
  }
  refused_.erase(name);
  ++version_;
  return Status::Ok();
}

Status HyperNodeForest::Remove(const std::string& name) {
  refused_.erase(name);
  Entry* e = Find(name);
  if (e == nullptr) return Status::NotFound("HyperNode " + name + ": not in the cache");
  if (!e->parent.empty()) {
    Entry* p = Find(e->parent);
    for (const auto& [node, _] : e->leaves) Dec(p, node);
    p->children.erase(name);
  }
  for (const std::string& child : e->children) Find(child)->parent.clear();
  for (const std::string& node : e->own) {
    auto o = owners_.find(node);
    o->second.erase(name);
    if (o->second.empty()) owners_.erase(o);
  }
  Unindex(name, *e);
  entries_.erase(name);
  ++version_;
  return Status::Ok();
}

void HyperNodeForest::Reevaluate(const std::string& name, const std::string& node,
                                 const k8s::StringMap* labels) {
  Entry* e = Find(name);
  const bool selects = labels != nullptr && MemberSelectsNode(*e, node, *labels);
  const bool has = e->own.count(node) > 0;
  if (selects == has) return;
  if (selects) {
    e->own.insert(node);
    owners_[node].insert(name);
    Inc(e, node);
  } else {
    e->own.erase(node);
    auto o = owners_.find(node);
    o->second.erase(name);
    if (o->second.empty()) owners_.erase(o);
    Dec(e, node);
  }
  ++version_;
}

void HyperNodeForest::UpsertNode(const std::string& name, const k8s::StringMap& labels) {
  auto [it, inserted] = nodes_.try_emplace(k8s::Interned(name), labels);
  if (!inserted) {
    if (it->second == labels) return;
    UnindexNodeLabels(name, it->second);
    it->second = labels;
  }
  for (const auto& [k, v] : labels) {
    if (label_index_.count(k)) node_labels_[k][v].insert(name);
  }
  // The HyperNodes that could select it now or did before.
  std::set<std::string> candidates = scan_hns_;
  if (auto x = exact_node_index_.find(name); x != exact_node_index_.end()) {
    candidates.insert(x->second.begin(), x->second.end());
  }
  if (auto o = owners_.find(name); o != owners_.end()) candidates.insert(o->second.begin(), o->second.end());
  if (!label_index_.empty()) {
    for (const auto& [k, v] : labels) {
      auto byk = label_index_.find(k);
      if (byk == label_index_.end()) continue;
      auto byv = byk->second.find(v);
      if (byv != byk->second.end()) candidates.insert(byv->second.begin(), byv->second.end());
    }
  }
  for (const std::string& hn : candidates) Reevaluate(hn, name, &it->second);
}

void HyperNodeForest::UnindexNodeLabels(const std::string& name, const k8s::StringMap& labels) {
  for (const auto& [k, v] : labels) {
    auto byk = node_labels_.find(k);
    if (byk == node_labels_.end()) continue;  // a key no labelMatch uses is not indexed
    auto byv = byk->second.find(v);           // an indexed key holds every known node's value
    byv->second.erase(name);
    if (byv->second.empty()) byk->second.erase(byv);
    if (byk->second.empty()) node_labels_.erase(byk);
  }
}

void HyperNodeForest::RemoveNode(const std::string& name) {
  auto n = nodes_.find(k8s::Interned(name));
  if (n == nodes_.end()) return;
  UnindexNodeLabels(name, n->second);
  nodes_.erase(n);
  auto o = owners_.find(name);
  if (o == owners_.end()) return;
  const std::set<std::string> holders = o->second;
  for (const std::string& hn : holders) Reevaluate(hn, name, nullptr);
}

std::map<std::string, HyperNodeForest::View> HyperNodeForest::Views() const {
  std::map<std::string, View> out;
  for (const auto& [name, e] : entries_) {
    View v;
    v.tier = e->obj->spec.tier;
    v.tier_name = e->obj->spec.tier_name;
    v.parent = e->parent;
    v.children.assign(e->children.begin(), e->children.end());
    v.nodes.reserve(e->leaves.size());
    for (const auto& [node, _] : e->leaves) v.nodes.push_back(node);
    std::sort(v.nodes.begin(), v.nodes.end());
    out.emplace(name, std::move(v));
  }
  return out;
}

}  // namespace volcache
