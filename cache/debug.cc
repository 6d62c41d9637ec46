// Dump (SPEC §8), the invariant checker and the comparer against the cluster source.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "api/resource_list.h"
#include "cache/cache_state.h"

namespace volcache {

namespace {

using Json = nlohmann::ordered_json;

Json ResourceJson(const Resource& r) {
  Json j = Json::object();
  if (r.milli_cpu() != 0) j["cpu"] = r.milli_cpu();
  if (r.memory() != 0) j["memory"] = r.memory();
  std::vector<std::pair<std::string, int64_t>> scalars;
  for (const auto* s = r.scalars_begin(); s != r.scalars_end(); ++s) {
    if (s->value != 0) scalars.emplace_back(ResourceNames::Name(s->id), s->value);
  }
  std::sort(scalars.begin(), scalars.end());
  for (auto& [name, v] : scalars) j[name] = v;
  return j;
}

Json NodeJson(const NodeInfo& n) {
  Json j;
  j["name"] = n.name();
  j["ready"] = n.Ready();
  j["reason"] = n.state().reason;
  j["allocatable"] = ResourceJson(n.allocatable());
  j["idle"] = ResourceJson(n.idle());
  j["used"] = ResourceJson(n.used());
  j["releasing"] = ResourceJson(n.releasing());
  j["pipelined"] = ResourceJson(n.pipelined());
  j["requested"] = ResourceJson(n.requested());
  Json nz = Json::object();
  if (n.non_zero_requested().milli_cpu != 0) nz["cpu"] = n.non_zero_requested().milli_cpu;
  if (n.non_zero_requested().memory != 0) nz["memory"] = n.non_zero_requested().memory;
  j["nonZeroRequested"] = std::move(nz);
  std::vector<std::string> tasks;
  tasks.reserve(n.tasks().size());
  for (const auto& [key, _] : n.tasks()) tasks.emplace_back(key);
  std::sort(tasks.begin(), tasks.end());
  j["tasks"] = tasks;
  return j;
}

Json JobJson(const JobInfo& job) {
  Json j;
  j["uid"] = job.uid();
  j["name"] = job.name();
  j["namespace"] = job.namespace_();
  j["queue"] = job.queue();
  j["priority"] = job.priority();
  j["minAvailable"] = job.min_available();
  j["podGroupPhase"] = job.pod_group_phase();
  j["allocated"] = ResourceJson(job.allocated());
  j["totalRequest"] = ResourceJson(job.total_request());
  std::vector<const TaskInfo*> tasks;
  for (const auto& [_, t] : job.tasks()) tasks.push_back(&t);
  std::sort(tasks.begin(), tasks.end(), [](const TaskInfo* a, const TaskInfo* b) {
    return std::tie(a->name(), a->namespace_(), a->uid()) < std::tie(b->name(), b->namespace_(), b->uid());
  });
  Json arr = Json::array();
  for (const TaskInfo* t : tasks) {
    Json tj;
    tj["uid"] = t->uid();
    tj["name"] = t->name();
    tj["namespace"] = t->namespace_();
    tj["status"] = TaskStatusName(t->status);
    tj["node"] = t->node_name;
    tj["request"] = ResourceJson(t->resreq());
    arr.push_back(std::move(tj));
  }
  j["tasks"] = std::move(arr);
  return j;
}

Json QueueJson(const QueueInfo& q) {
  Json j;
  j["name"] = q.name;
  j["weight"] = q.weight;
  j["reclaimable"] = q.reclaimable;
  j["state"] = QueueStateName(q.state);
  j["capability"] = ResourceJson(q.capability);
  return j;
}

template <typename Map, typename Fn>
Json SortedArray(const Map& m, Fn fn) {
  std::vector<typename Map::key_type> keys;
  keys.reserve(m.size());
  for (const auto& [k, _] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  Json arr = Json::array();
  for (const auto& k : keys) arr.push_back(fn(m.at(k)));
  return arr;
}

}  // namespace

std::string SchedulerCache::Dump() const {
  const Impl& m = *impl_;
  MutexLock lock(&m.mu);
  Json j;
  j["nodes"] = SortedArray(m.nodes, [](const NodeSlot& s) { return NodeJson(*s.info); });
  j["jobs"] = SortedArray(m.jobs, [](const JobSlot& s) { return JobJson(*s.info); });
  j["queues"] = SortedArray(m.queues, [](const QueueInfo& q) { return QueueJson(q); });
  std::vector<std::string> assumed;
  for (const auto& [key, _] : m.assumed) assumed.push_back(key);
  std::sort(assumed.begin(), assumed.end());
  j["assumed"] = assumed;
  j["nodeList"] = m.tree.List();
  Json hns = Json::object();
  for (const auto& [name, v] : m.forest.Views()) {
    Json h;
    h["tier"] = v.tier;
    h["tierName"] = v.tier_name;
    h["parent"] = v.parent.empty() ? Json(nullptr) : Json(v.parent);
    h["children"] = v.children;
    h["nodes"] = v.nodes;
    hns[name] = std::move(h);
  }
  j["hyperNodes"] = std::move(hns);
  j["hyperNodesReady"] = m.forest.ready();
  return j.dump();
}

std::string DumpClusterInfo(const ClusterInfo& snap) {
  Json j;
  j["nodes"] =
      SortedArray(snap.nodes(), [](const std::shared_ptr<const NodeInfo>& n) { return NodeJson(*n); });
  j["jobs"] =
      SortedArray(snap.jobs(), [](const std::shared_ptr<const JobInfo>& job) { return JobJson(*job); });
  j["queues"] = SortedArray(snap.queues, [](const QueueInfo& q) { return QueueJson(q); });
  j["nodeList"] = snap.node_list();
  return j.dump();
}

// ------------------------------------------------------------------ invariants

namespace {

void ExpectEqual(std::vector<std::string>& out, const std::string& what, const Resource& got,
                 const Resource& want) {
  if (!got.Equal(want, DimensionDefault::kZero)) {
    out.push_back(what + " is {" + got.ToString() + "}, its tasks imply {" + want.ToString() + "}");
  }
}

}  // namespace

Status SchedulerCache::CheckInvariants() const {
  const Impl& m = *impl_;
  MutexLock lock(&m.mu);
  std::vector<std::string> v;

  for (const auto& [name, slot] : m.nodes) {
    const NodeInfo& n = *slot.info;
    if (n.name() != name) v.push_back("node slot " + name + " holds node " + n.name());
    Resource used, releasing, pipelined, requested;
    for (const auto& [key_view, t] : n.tasks()) {
      const std::string key(t.key());
      if (key_view != key)
        v.push_back("node " + name + " holds task " + key + " under key " + std::string(key_view));
      if (t.node_name != name) v.push_back("task " + key + " on node " + name + " names node " + t.node_name);
      if (IsTerminatedStatus(t.status)) v.push_back("terminated task " + key + " still on node " + name);
      if (t.status == TaskStatus::kPipelined) {
        pipelined.Add(t.resreq());
        continue;
      }
      used.Add(t.resreq());
      requested.Add(t.resreq());
      if (t.status == TaskStatus::kReleasing) releasing.Add(t.resreq());
      // Every task on a node is the cache's task, with the same status.
      const TaskInfo* cached = m.FindTask(key);
      if (!cached) {
        v.push_back("task " + key + " on node " + name + " is not in any job");
      } else if (cached->status != t.status || cached->node_name != name) {
        v.push_back("task " + key + " on node " + name + " is " + std::string(TaskStatusName(t.status)) +
                    " there but " + std::string(TaskStatusName(cached->status)) + " on " + cached->node_name +
                    " in its job");
      }
    }
    if (n.is_placeholder()) {
      if (n.tasks().empty()) v.push_back("placeholder node " + name + " holds no task");
      if (!n.used().IsEmpty() || !n.idle().IsEmpty() || !n.releasing().IsEmpty() ||
          !n.pipelined().IsEmpty()) {
        v.push_back("placeholder node " + name + " accounts resources");
      }
      if (m.tree.Contains(name)) v.push_back("placeholder node " + name + " is in the node list");
      continue;
    }
    if (!m.tree.Contains(name)) v.push_back("node " + name + " is missing from the node list");
    Resource idle = n.allocatable();
    idle.SubUnchecked(used);
    ExpectEqual(v, "node " + name + " used", n.used(), used);
    ExpectEqual(v, "node " + name + " idle", n.idle(), idle);
    ExpectEqual(v, "node " + name + " releasing", n.releasing(), releasing);
    ExpectEqual(v, "node " + name + " pipelined", n.pipelined(), pipelined);
    ExpectEqual(v, "node " + name + " requested", n.requested(), requested);
  }
  if (m.tree.size() > m.nodes.size()) v.push_back("node list holds nodes the cache does not");

  size_t indexed = 0;
  auto check_task = [&](const std::string& where, const TaskInfo& t) {
    m.mu.AssertHeld();  // called only below, under the lock (the analysis does not follow lambdas)
    ++indexed;
    auto loc = m.task_index.find(t.key());
    if (loc == m.task_index.end() || loc->first != t.key() || loc->second.uid() != t.uid() ||
        loc->second.job() != t.job()) {
      v.push_back(fmt::format("task {} in {} is not indexed", t.key(), where));
    }
    if (t.node_name.empty() || IsTerminatedStatus(t.status)) return;
    auto n = m.nodes.find(t.node_name);
    if (n == m.nodes.end() || n->second.info->FindTask(t.key()) == nullptr) {
      v.push_back(fmt::format("task {} of {} names node {} which does not hold it", t.key(), where,
                              t.node_name.str()));
    }
  };
  for (const auto& [key, slot] : m.jobs) {
    // The key views the job's own id block (which keeps its characters alive).
    const k8s::SharedString& id = slot.info->uid();
    if (key != id || key.data() != id.data()) {
      v.push_back(fmt::format("job slot {} holds job {} (its key not a view of the job's id)", key, id));
    }
    const JobInfo& job = *slot.info;
    Resource allocated;
    for (const auto& [uid, t] : job.tasks()) {
      if (t.job() != id) v.push_back(fmt::format("task {} in job {} names job {}", t.key(), id, t.job()));
      if (uid != t.uid()) v.push_back(fmt::format("job {} holds task {} under uid {}", id, t.key(), uid));
      if (IsAllocatedStatus(t.status)) allocated.Add(t.resreq());
      check_task("job " + id, t);
    }
    ExpectEqual(v, "job " + id + " allocated", job.allocated(), allocated);
  }
  // A departed PodGroup's UID is kept for a job that lives on without it, and only then.
  for (const auto& [id, pg_uid] : m.departed_pod_groups) {
    auto j = m.jobs.find(id);
    if (j == m.jobs.end()) {
      v.push_back(
          fmt::format("departed PodGroup {} names job {}, which is not in the cache", pg_uid.str(), id));
    } else if (j->second.info->pod_group() != nullptr) {
      v.push_back(fmt::format("job {} has PodGroup {} and a departed one, {}", id,
                              j->second.info->pod_group()->metadata.uid.str(), pg_uid.str()));
    }
  }
  for (const auto& [key, t] : m.jobless) check_task("no job", t);
  if (indexed != m.task_index.size()) {
    v.push_back("task index holds " + std::to_string(m.task_index.size()) + " tasks, jobs hold " +
                std::to_string(indexed));
  }
  for (const auto& [key, a] : m.assumed) {
    const TaskInfo* t = m.FindTask(key);
    if (!t) {
      v.push_back("assumed task " + key + " is not in the cache");
    } else if (t->status != TaskStatus::kBinding && t->status != TaskStatus::kBound) {
      v.push_back("assumed task " + key + " is " + std::string(TaskStatusName(t->status)));
    } else if (t->node_name != a.node) {
      v.push_back("assumed task " + key + " is on " + t->node_name + ", assumed on " + a.node);
    }
  }
  if (v.empty()) return Status::Ok();
  std::string msg = std::to_string(v.size()) + " invariant violation(s):";
  for (const auto& s : v) msg += "\n  " + s;
  return Status::Internal(msg);
}

// --------------------------------------------------------------------- compare

std::string SchedulerCache::Compare() const {
  // Read the source first, without the cache lock.
  std::vector<k8s::NodePtr> src_nodes = impl_->SourceNodes();
  std::vector<k8s::PodPtr> src_pods = impl_->SourcePods();
  const Impl& m = *impl_;
  MutexLock lock(&m.mu);
  std::vector<std::string> out;
  std::set<std::string> seen_nodes;
  for (const auto& node : src_nodes) {
    const std::string& name = node->metadata.name;
    seen_nodes.insert(name);
    auto it = m.nodes.find(name);
    if (it == m.nodes.end() || it->second.info->is_placeholder()) {
      out.push_back("missing node " + name);
      continue;
    }
    auto alloc =
        ResourceFromList(node->status.allocatable.empty() ? node->status.capacity : node->status.allocatable,
                         "status.allocatable");
    if (alloc.ok() && !alloc->Equal(it->second.info->allocatable(), DimensionDefault::kZero)) {
      out.push_back("node " + name + " allocatable is {" + it->second.info->allocatable().ToString() +
                    "} in the cache, {" + alloc->ToString() + "} in the cluster");
    }
  }
  for (const auto& [name, slot] : m.nodes) {
    if (!slot.info->is_placeholder() && !seen_nodes.count(name)) out.push_back("extra node " + name);
  }
  std::set<std::string> seen_pods;
  for (const auto& pod : src_pods) {
    if (!IsOurs(*pod, m.options.scheduler_name)) continue;
    const std::string key = KeyOf(pod->metadata);
    seen_pods.insert(key);
    const TaskInfo* t = m.FindTask(key);
    if (!t) {
      out.push_back("missing pod " + key);
      continue;
    }
    if (m.assumed.count(key)) continue;  // a bind in flight legitimately differs
    if (t->node_name != pod->spec.node_name) {
      out.push_back("pod " + key + " is on node '" + t->node_name + "' in the cache, '" +
                    pod->spec.node_name + "' in the cluster");
    }
    TaskStatus want = TaskStatusFromPod(*pod);
    if (t->status != want && t->status != TaskStatus::kReleasing) {
      out.push_back("pod " + key + " is " + std::string(TaskStatusName(t->status)) + " in the cache, " +
                    std::string(TaskStatusName(want)) + " in the cluster");
    }
  }
  for (const auto& [_, loc] : m.task_index) {
    const std::string key = loc.meta->key().str();
    if (!seen_pods.count(key)) out.push_back("extra pod " + key);
  }
  std::sort(out.begin(), out.end());
  std::string report;
  for (const auto& line : out) report += line + "\n";
  return report;
}

}  // namespace volcache
