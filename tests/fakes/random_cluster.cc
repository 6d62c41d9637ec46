#include "tests/fakes/random_cluster.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "api/quantity.h"
#include "api/queue_info.h"
#include "api/task_info.h"

namespace volcache::testing {

namespace {

constexpr const char* kNamespaces[] = {"ns-a", "ns-b"};
constexpr const char* kGhostNodes[] = {"ghost-0", "ghost-1"};
constexpr const char* kQueueNames[] = {"default", "q1", "q2"};
// A PodGroup's spec.queue: "" means the default queue, "nope" is never created.
constexpr const char* kPodGroupQueues[] = {"", "default", "default", "q1", "q1", "q2", "nope"};
constexpr const char* kPriorityClassNames[] = {"high", "low", "base"};
constexpr const char* kPodGroupPriorityClasses[] = {"", "high", "low", "base", "ghost-pc"};

Quantity Q(const std::string& text) {
  Result<Quantity> q = Quantity::Parse(text);
  return q.ok() ? *q : Quantity();
}

std::string Milli(int64_t milli) { return std::to_string(milli) + "m"; }

k8s::ResourceList Requests(int64_t cpu_milli, int64_t memory_mi, int64_t gpu, bool invalid) {
  k8s::ResourceList r;
  if (cpu_milli > 0) r.emplace_back("cpu", Q(Milli(cpu_milli)));
  if (memory_mi > 0) r.emplace_back("memory", Q(std::to_string(memory_mi) + "Mi"));
  if (gpu > 0) r.emplace_back("nvidia.com/gpu", Q(std::to_string(gpu)));
  if (invalid) r.emplace_back("cpu", Q("-1"));
  return r;
}

}  // namespace

// ------------------------------------------------------------------ object builders

k8s::PodPtr RandomCluster::PodDesc::Build() const {
  auto pod = std::make_shared<k8s::Pod>();
  pod->metadata.name = name;
  pod->metadata.namespace_ = ns;
  pod->metadata.uid = uid;
  pod->metadata.resource_version = std::to_string(rv);
  pod->metadata.creation_timestamp = 1'700'000'000'000;
  if (deleting) pod->metadata.deletion_timestamp = 1'700'000'100'000;
  if (!group.empty()) pod->metadata.annotations[std::string(kGroupNameAnnotation)] = group;
  pod->spec.scheduler_name = scheduler;
  pod->spec.node_name = node;
  for (int i = 0; i < containers; ++i) {
    k8s::Container c;
    c.name = "c" + std::to_string(i);
    c.image = "busybox";
    // The second container asks for half: requests differ per container.
    int64_t div = i == 0 ? 1 : 2;
    c.requests = Requests(cpu_milli / div, memory_mi / div, i == 0 ? gpu : 0, invalid && i == 0);
    c.limits = c.requests;
    pod->spec.containers.push_back(std::move(c));
  }
  pod->status.phase = phase;
  return pod;
}

k8s::NodePtr RandomCluster::NodeDesc::Build() const {
  auto node = std::make_shared<k8s::Node>();
  node->metadata.name = name;
  node->metadata.uid = "uid-" + name;
  node->metadata.resource_version = std::to_string(rv);
  node->metadata.labels["kubernetes.io/hostname"] = name;
  switch (zone) {
    case 1:
      node->metadata.labels["topology.kubernetes.io/zone"] = "z1";
      break;
    case 2:
      node->metadata.labels["topology.kubernetes.io/zone"] = "z2";
      break;
    case 3:
      node->metadata.labels["failure-domain.beta.kubernetes.io/zone"] = "z1";
      node->metadata.labels["topology.kubernetes.io/zone"] = "z2";
      break;
    case 4:
      node->metadata.labels["topology.kubernetes.io/region"] = "r1";
      node->metadata.labels["topology.kubernetes.io/zone"] = "z3";
      break;
    default:
      break;
  }
  if (!revocable_zone.empty()) node->metadata.labels[std::string(kRevocableZoneLabel)] = revocable_zone;
  k8s::ResourceList alloc;
  alloc.emplace_back("cpu", Q(std::to_string(cpu)));
  alloc.emplace_back("memory", Q(std::to_string(memory_gi) + "Gi"));
  alloc.emplace_back("pods", Q(std::to_string(pods)));
  if (gpu > 0) alloc.emplace_back("nvidia.com/gpu", Q(std::to_string(gpu)));
  node->status.capacity = alloc;
  if (invalid) alloc.emplace_back("memory", Q("-1Gi"));
  node->status.allocatable = std::move(alloc);
  node->status.conditions.push_back(k8s::NodeCondition{"MemoryPressure", "False", "", ""});
  if (!ready.empty()) {
    node->status.conditions.push_back(
        k8s::NodeCondition{"Ready", ready, ready == "True" ? "KubeletReady" : "KubeletNotReady", ""});
  }
  return node;
}

// ------------------------------------------------------------------ construction

RandomCluster::RandomCluster(RandomClusterOptions options)
    : options_(std::move(options)), rng_(options_.seed), clock_(std::make_shared<FakeClock>()) {
  SchedulerCacheOptions co;
  co.scheduler_name = options_.scheduler_name;
  co.assumed_ttl = options_.assumed_ttl;
  co.removal_log_capacity = options_.removal_log_capacity;
  cache_ = std::make_unique<SchedulerCache>(co, clock_, &source_);
  cache_->EnsureDefaultQueues();
}

RandomCluster::~RandomCluster() = default;

size_t RandomCluster::Uniform(size_t n) {
  if (n <= 1) return 0;
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
}

bool RandomCluster::Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

template <typename Map>
const typename Map::value_type* RandomCluster::PickFrom(const Map& m) {
  if (m.empty()) return nullptr;
  auto it = m.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(Uniform(m.size())));
  return &*it;
}

std::vector<std::string> RandomCluster::LiveNodeNames() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : nodes_) out.push_back(name);
  return out;
}

std::vector<std::string> RandomCluster::PodKeys() const {
  std::vector<std::string> out;
  for (const auto& [key, _] : pods_) out.push_back(key);
  return out;
}

std::set<std::string> RandomCluster::PodGroupIds() const {
  std::set<std::string> out;
  for (const auto& [id, _] : pod_groups_) out.insert(id);
  return out;
}

std::string RandomCluster::ForeignScheduler() const {
  return options_.scheduler_name == "default-scheduler" ? "volcano" : "default-scheduler";
}

std::string RandomCluster::RandomNamespace() { return kNamespaces[Uniform(2)]; }

std::string RandomCluster::RandomPodName() {
  char buf[8];
  std::snprintf(buf, sizeof buf, "p%02zu", Uniform(static_cast<size_t>(options_.pods_per_namespace)));
  return buf;
}

std::string RandomCluster::RandomNodeName(bool include_ghosts) {
  if (include_ghosts && Chance(0.12)) return kGhostNodes[Uniform(2)];
  return "node-" + std::to_string(Uniform(static_cast<size_t>(options_.nodes)));
}

void RandomCluster::RandomizeRequest(PodDesc& d) {
  static constexpr int64_t kCpu[] = {0, 100, 500, 1000, 2000, 3000};
  static constexpr int64_t kMem[] = {0, 256, 1024, 2048, 8192};
  d.cpu_milli = kCpu[Uniform(std::size(kCpu))];
  d.memory_mi = kMem[Uniform(std::size(kMem))];
  d.gpu = Chance(0.2) ? static_cast<int64_t>(1 + Uniform(2)) : 0;
  d.containers = Chance(0.25) ? 2 : 1;
  d.invalid = Chance(0.02);
}

RandomCluster::PodDesc RandomCluster::RandomPod(const std::string& ns, const std::string& name) {
  PodDesc d;
  d.ns = ns;
  d.name = name;
  d.uid = "uid-" + std::to_string(next_uid_++);
  // Now and then a uid already held by another pod of the namespace: the cache must refuse
  // two tasks with one uid in a job.
  if (Chance(0.03)) {
    for (const auto& [key, other] : pods_) {
      if (other.ns == ns && other.name != name && Chance(0.3)) {
        d.uid = other.uid;
        break;
      }
    }
  }
  if (!Chance(0.15))
    d.group = "j" + std::to_string(Uniform(static_cast<size_t>(options_.jobs_per_namespace)));
  d.scheduler = Chance(0.8) ? options_.scheduler_name : ForeignScheduler();
  if (Chance(0.35)) d.node = RandomNodeName(/*include_ghosts=*/true);
  if (d.node.empty()) {
    static constexpr const char* kPhases[] = {"Pending", "Pending", "Pending", "Pending",   "Pending",
                                              "Pending", "Pending", "Running", "Succeeded", "Failed"};
    d.phase = kPhases[Uniform(std::size(kPhases))];
  } else {
    static constexpr const char* kPhases[] = {"Running", "Running",   "Running", "Running", "Pending",
                                              "Pending", "Succeeded", "Failed",  "Unknown"};
    d.phase = kPhases[Uniform(std::size(kPhases))];
  }
  d.deleting = Chance(0.08);
  RandomizeRequest(d);
  d.rv = next_rv_++;
  return d;
}

RandomCluster::NodeDesc RandomCluster::RandomNode(const std::string& name) {
  static constexpr int64_t kCpu[] = {2, 4, 8, 16};
  static constexpr int64_t kMem[] = {4, 16, 32};
  static constexpr int64_t kPods[] = {3, 10, 110};
  NodeDesc d;
  if (auto it = nodes_.find(name); it != nodes_.end() && Chance(0.5)) {
    d = it->second;  // an update that changes one thing
    switch (Uniform(5)) {
      case 0:
        d.cpu = kCpu[Uniform(std::size(kCpu))];
        break;
      case 1:
        d.ready = d.ready == "True" ? (Chance(0.7) ? "False" : "") : "True";
        if (d.ready != "True" && Chance(0.3)) d.ready = "True";  // mostly Ready: snapshots hold nodes
        break;
      case 2:
        d.zone = static_cast<int>(Uniform(5));
        break;
      case 3:
        d.revocable_zone = d.revocable_zone.empty() ? "rz1" : "";
        break;
      default:
        d.pods = kPods[Uniform(std::size(kPods))];
        break;
    }
  } else {
    d.name = name;
    d.cpu = kCpu[Uniform(std::size(kCpu))];
    d.memory_gi = kMem[Uniform(std::size(kMem))];
    d.pods = kPods[Uniform(std::size(kPods))];
    d.gpu = Chance(0.4) ? 4 : 0;
    d.ready = Chance(0.8) ? "True" : (Chance(0.5) ? "False" : "");
    d.zone = static_cast<int>(Uniform(5));
    d.revocable_zone = Chance(0.2) ? "rz1" : "";
  }
  d.invalid = Chance(0.03);
  d.rv = next_rv_++;
  return d;
}

std::shared_ptr<const k8s::PodGroup> RandomCluster::RandomPodGroup(const std::string& ns,
                                                                   const std::string& name, bool keep_uid) {
  auto pg = std::make_shared<k8s::PodGroup>();
  pg->metadata.name = name;
  pg->metadata.namespace_ = ns;
  auto cur = pod_groups_.find(ns + "/" + name);
  pg->metadata.uid = keep_uid && cur != pod_groups_.end()
                         ? cur->second->metadata.uid
                         : UidString("pg-uid-" + std::to_string(next_uid_++));
  pg->metadata.resource_version = std::to_string(next_rv_++);
  pg->metadata.creation_timestamp = 1'700'000'000'000 + static_cast<int64_t>(Uniform(1000));
  pg->spec.min_member = static_cast<int32_t>(Uniform(4));
  pg->spec.queue = kPodGroupQueues[Uniform(std::size(kPodGroupQueues))];
  pg->spec.priority_class_name = kPodGroupPriorityClasses[Uniform(std::size(kPodGroupPriorityClasses))];
  if (Chance(0.5)) {
    pg->spec.mutable_rare().min_resources.emplace_back("cpu", Q(std::to_string(1 + Uniform(4))));
  }
  if (Chance(0.03)) pg->spec.mutable_rare().min_resources.emplace_back("memory", Q("-5Mi"));  // refused
  static constexpr const char* kPhases[] = {"Pending", "Inqueue", "Running", ""};
  pg->status.phase = kPhases[Uniform(std::size(kPhases))];
  return pg;
}

std::shared_ptr<const k8s::Queue> RandomCluster::RandomQueue(const std::string& name) {
  auto q = std::make_shared<k8s::Queue>();
  q->metadata.name = name;
  q->metadata.uid = "q-uid-" + name;
  q->metadata.resource_version = std::to_string(next_rv_++);
  q->spec.weight = static_cast<int32_t>(1 + Uniform(4));
  if (Chance(0.4)) q->spec.capability.emplace_back("cpu", Q(std::to_string(4 + Uniform(20))));
  if (Chance(0.3)) q->spec.reclaimable = Chance(0.5);
  static constexpr const char* kStates[] = {"", "Open", "Closed", "Closing"};
  q->status.state = kStates[Uniform(std::size(kStates))];
  if (Chance(0.03)) q->spec.capability.emplace_back("memory", Q("-1"));  // refused
  return q;
}

// ------------------------------------------------------------------ steps

RandomStep RandomCluster::Step() {
  // Weights (out of the sum below) chosen so that every operation happens often in a few
  // thousand steps and the cluster stays busy: pods arrive as often as they leave, binds
  // are frequent enough to collide with confirmations, forgets and node changes.
  struct Op {
    int weight;
    RandomStep (RandomCluster::*fn)();
  };
  static constexpr Op kOps[] = {
      {12, &RandomCluster::AddNewPod},
      {2, &RandomCluster::ReAddPod},
      {9, &RandomCluster::UpdatePod},
      {6, &RandomCluster::ConfirmBind},
      {7, &RandomCluster::DeletePod},
      {7, &RandomCluster::PutNode},
      {2, &RandomCluster::RemoveNode},
      {2, &RandomCluster::SyncNode},
      {6, &RandomCluster::PutPodGroup},
      {1, &RandomCluster::ResendPodGroup},
      {3, &RandomCluster::DeletePodGroup},
      {3, &RandomCluster::PutQueue},
      {1, &RandomCluster::DeleteQueue},
      {2, &RandomCluster::PutPriorityClass},
      {1, &RandomCluster::DeletePriorityClass},
      {1, &RandomCluster::PutQuota},
      {1, &RandomCluster::DeleteQuota},
      {12, &RandomCluster::Bind},
      {5, &RandomCluster::FinishBinding},
      {4, &RandomCluster::Forget},
      {4, &RandomCluster::Evict},
      {3, &RandomCluster::AdvanceClock},
      {2, &RandomCluster::Resync},
      {3, &RandomCluster::Drain},
      {1, &RandomCluster::TakeEvictions},
  };
  int total = 0;
  for (const Op& op : kOps) total += op.weight;
  int r = static_cast<int>(Uniform(static_cast<size_t>(total)));
  for (const Op& op : kOps) {
    if (r < op.weight) return (this->*op.fn)();
    r -= op.weight;
  }
  return Drain();
}

RandomStep RandomCluster::MaybeDrain(RandomStep step) {
  if (Chance(0.7)) {
    cache_->DrainQueuesOnce();
    step.what += " +drain";
  }
  return step;
}

RandomStep RandomCluster::AddNewPod() {
  std::string ns = RandomNamespace();
  std::string name = RandomPodName();
  PodDesc d = RandomPod(ns, name);
  const std::string key = d.Key();
  bool recreated = false;
  if (auto it = pods_.find(key); it != pods_.end()) {
    recreated = true;
    // The name is taken: re-create it (delete first, as the API server would).
    k8s::PodPtr old = it->second.Build();
    source_.DeletePod(ns, name);
    pods_.erase(it);
    previous_pods_.erase(key);
    binds_.erase(key);
    Status s = cache_->DeletePod(*old);
    (void)s;
  }
  k8s::PodPtr pod = d.Build();
  source_.PutPod(pod);
  pods_[key] = d;
  RandomStep step;
  step.what = "add pod " + key + " uid=" + d.uid + " group=" + d.group + " sched=" + d.scheduler +
              " node=" + d.node + " phase=" + d.phase + (d.deleting ? " deleting" : "") +
              (d.invalid ? " invalid" : "");
  if (recreated) step.what = "delete and re-" + step.what;
  step.status = cache_->AddPod(pod);
  step.single_call = !recreated;
  return step;
}

RandomStep RandomCluster::ReAddPod() {
  const auto* entry = PickFrom(pods_);
  if (!entry) return AddNewPod();
  RandomStep step;
  step.what = "re-add pod " + entry->first;
  step.status = cache_->AddPod(entry->second.Build());
  step.single_call = true;
  return step;
}

RandomStep RandomCluster::ApplyPodUpdate(const PodDesc& next, const std::string& what) {
  const std::string key = next.Key();
  k8s::PodPtr old = pods_.at(key).Build();
  k8s::PodPtr pod = next.Build();
  previous_pods_[key] = old;
  pods_[key] = next;
  source_.PutPod(pod);
  RandomStep step;
  step.what = what + " " + key + " → node=" + next.node + " phase=" + next.phase + " group=" + next.group +
              " sched=" + next.scheduler + (next.deleting ? " deleting" : "") +
              (next.invalid ? " invalid" : "");
  step.status = cache_->UpdatePod(old, pod);
  step.single_call = true;
  return step;
}

RandomStep RandomCluster::UpdatePod() {
  const auto* entry = PickFrom(pods_);
  if (!entry) return AddNewPod();
  PodDesc d = entry->second;
  d.rv = next_rv_++;
  static constexpr const char* kPhases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
  switch (Uniform(9)) {
    case 0:
      d.phase = kPhases[Uniform(std::size(kPhases))];
      break;
    case 8:
      d.uid = "uid-" + std::to_string(next_uid_++);  // re-created under the same name, delete missed
      break;
    case 1:
      d.deleting = true;
      break;
    case 2:
      d.node = RandomNodeName(true);
      if (d.phase == "Pending" && Chance(0.6)) d.phase = "Running";
      break;
    case 3:
      d.node.clear();  // never happens in Kubernetes; the cache must cope anyway
      break;
    case 4:
      RandomizeRequest(d);
      break;
    case 5:
      d.group =
          Chance(0.15) ? "" : "j" + std::to_string(Uniform(static_cast<size_t>(options_.jobs_per_namespace)));
      break;
    case 6:
      d.scheduler = d.scheduler == options_.scheduler_name ? ForeignScheduler() : options_.scheduler_name;
      break;
    default:
      d.phase = "Running";
      if (d.node.empty() && Chance(0.5)) d.node = RandomNodeName(false);
      break;
  }
  return ApplyPodUpdate(d, "update pod");
}

void RandomCluster::PruneBinds() {
  // Binds the cache dropped since (pod deleted or updated, resynced, expired) mostly leave
  // the list; a few stay to be refused.
  for (auto it = binds_.begin(); it != binds_.end();) {
    if (!cache_->IsAssumed(it->first) && Chance(0.85)) {
      it = binds_.erase(it);
    } else {
      ++it;
    }
  }
}

RandomStep RandomCluster::ConfirmBind() {
  PruneBinds();
  const auto* b = PickFrom(binds_);
  if (!b) return UpdatePod();
  auto it = pods_.find(b->first);
  if (it == pods_.end()) {
    binds_.erase(b->first);
    return UpdatePod();
  }
  PodDesc d = it->second;
  d.rv = next_rv_++;
  // Mostly where it was assumed; sometimes the binder put it elsewhere.
  d.node = Chance(0.9) ? b->second : RandomNodeName(true);
  d.phase = Chance(0.5) ? "Running" : "Pending";
  binds_.erase(b->first);
  return ApplyPodUpdate(d, "confirm pod");
}

RandomStep RandomCluster::DeletePod() {
  RandomStep step;
  step.single_call = true;
  const auto* entry = PickFrom(pods_);
  if (!entry || Chance(0.08)) {
    // A pod the cache never saw (or already forgot): NotFound for ours, OK for foreign.
    PodDesc d = RandomPod(RandomNamespace(), "never-" + std::to_string(Uniform(3)));
    step.what = "delete unknown pod " + d.Key();
    step.status = cache_->DeletePod(*d.Build());
    return step;
  }
  const std::string key = entry->first;
  k8s::PodPtr tombstone = entry->second.Build();
  if (auto prev = previous_pods_.find(key); prev != previous_pods_.end() && Chance(0.2)) {
    tombstone = prev->second;  // a tombstone with a stale final state
    step.what = "delete pod (stale tombstone) " + key;
  } else {
    step.what = "delete pod " + key;
  }
  source_.DeletePod(tombstone->metadata.namespace_, tombstone->metadata.name);
  pods_.erase(key);
  previous_pods_.erase(key);
  binds_.erase(key);
  step.status = cache_->DeletePod(*tombstone);
  return step;
}

RandomStep RandomCluster::PutNode() {
  std::string name = RandomNodeName(false);
  NodeDesc d = RandomNode(name);
  auto prev = nodes_.find(name);
  k8s::NodePtr node = d.Build();
  source_.PutNode(node);
  RandomStep step;
  step.what = std::string(prev == nodes_.end() ? "add" : "update") + " node " + name +
              " cpu=" + std::to_string(d.cpu) + " pods=" + std::to_string(d.pods) + " ready=" + d.ready +
              " zone=" + std::to_string(d.zone) + " rz=" + d.revocable_zone + (d.invalid ? " invalid" : "");
  if (prev == nodes_.end()) {
    cache_->AddNode(*node);
  } else {
    cache_->UpdateNode(*prev->second.Build(), *node);
  }
  nodes_[name] = d;
  return MaybeDrain(std::move(step));
}

RandomStep RandomCluster::RemoveNode() {
  const auto* entry = PickFrom(nodes_);
  if (!entry) return PutNode();
  const std::string name = entry->first;
  k8s::NodePtr node = entry->second.Build();
  source_.DeleteNode(name);
  nodes_.erase(name);
  cache_->DeleteNode(*node);
  RandomStep step;
  step.what = "delete node " + name;
  return MaybeDrain(std::move(step));
}

RandomStep RandomCluster::SyncNode() {
  RandomStep step;
  std::string name = RandomNodeName(true);
  step.what = "sync node " + name;
  step.status = cache_->SyncNode(name);
  step.single_call = true;
  return step;
}

RandomStep RandomCluster::PutPodGroup() {
  std::string ns = RandomNamespace();
  std::string name = "j" + std::to_string(Uniform(static_cast<size_t>(options_.jobs_per_namespace)));
  const std::string id = ns + "/" + name;
  auto cur = pod_groups_.find(id);
  auto pg = RandomPodGroup(ns, name, /*keep_uid=*/cur != pod_groups_.end() && Chance(0.85));
  RandomStep step;
  step.single_call = true;
  step.what = std::string(cur == pod_groups_.end() ? "add" : "update") + " podgroup " + id +
              " uid=" + pg->metadata.uid + " queue=" + pg->spec.queue + " pc=" + pg->spec.priority_class_name;
  if (cur == pod_groups_.end()) {
    step.status = cache_->AddPodGroup(pg);
  } else {
    step.status = cache_->UpdatePodGroup(cur->second, pg);
  }
  pod_groups_[id] = pg;
  return step;
}

RandomStep RandomCluster::ResendPodGroup() {
  const auto* entry = PickFrom(pod_groups_);
  if (!entry) return PutPodGroup();
  RandomStep step;
  step.single_call = true;
  step.what = "resend podgroup " + entry->first + " (same resourceVersion)";
  step.status = cache_->UpdatePodGroup(entry->second, entry->second);
  return step;
}

RandomStep RandomCluster::DeletePodGroup() {
  RandomStep step;
  step.single_call = true;
  const auto* entry = PickFrom(pod_groups_);
  if (!entry || Chance(0.1)) {
    auto pg = RandomPodGroup(RandomNamespace(), "jx", false);
    step.what = "delete unknown podgroup " + pg->metadata.namespace_ + "/jx";
    step.status = cache_->DeletePodGroup(*pg);
    return step;
  }
  const std::string id = entry->first;
  auto pg = entry->second;
  pod_groups_.erase(id);
  step.what = "delete podgroup " + id;
  step.status = cache_->DeletePodGroup(*pg);
  return step;
}

RandomStep RandomCluster::PutQueue() {
  std::string name = kQueueNames[Uniform(std::size(kQueueNames))];
  auto q = RandomQueue(name);
  RandomStep step;
  step.single_call = true;
  step.what = "put queue " + name + " weight=" + std::to_string(q->spec.weight);
  auto cur = queues_.find(name);
  if (cur == queues_.end()) {
    step.status = cache_->AddQueue(q);
  } else {
    step.status = cache_->UpdateQueue(cur->second, q);
  }
  queues_[name] = q;
  return step;
}

RandomStep RandomCluster::DeleteQueue() {
  std::string name = kQueueNames[Uniform(std::size(kQueueNames))];
  auto q = RandomQueue(name);
  queues_.erase(name);
  RandomStep step;
  step.single_call = true;
  step.what = "delete queue " + name;
  step.status = cache_->DeleteQueue(*q);
  // The daemon re-creates the default queues when they go missing.
  if (Chance(0.5)) {
    cache_->EnsureDefaultQueues();
    step.single_call = false;
    step.what += " +ensure defaults";
  }
  return step;
}

RandomStep RandomCluster::PutPriorityClass() {
  k8s::PriorityClass pc;
  pc.metadata.name = kPriorityClassNames[Uniform(std::size(kPriorityClassNames))];
  pc.metadata.uid = "pc-" + pc.metadata.name;
  pc.value = static_cast<int32_t>(Uniform(2001)) - 1000;
  pc.global_default = Chance(0.3);
  RandomStep step;
  step.single_call = true;
  step.what = "put priorityclass " + pc.metadata.name + "=" + std::to_string(pc.value) +
              (pc.global_default ? " globalDefault" : "");
  auto cur = priority_classes_.find(pc.metadata.name);
  step.status = cur == priority_classes_.end() ? cache_->AddPriorityClass(pc)
                                               : cache_->UpdatePriorityClass(cur->second, pc);
  priority_classes_[pc.metadata.name] = pc;
  return step;
}

RandomStep RandomCluster::DeletePriorityClass() {
  k8s::PriorityClass pc;
  pc.metadata.name = kPriorityClassNames[Uniform(std::size(kPriorityClassNames))];
  priority_classes_.erase(pc.metadata.name);
  RandomStep step;
  step.single_call = true;
  step.what = "delete priorityclass " + pc.metadata.name;
  step.status = cache_->DeletePriorityClass(pc);
  return step;
}

RandomStep RandomCluster::PutQuota() {
  k8s::ResourceQuota q;
  q.metadata.namespace_ = RandomNamespace();
  q.metadata.name = "rq" + std::to_string(Uniform(2));
  q.spec_hard.emplace_back("cpu", Q(std::to_string(4 + Uniform(16))));
  if (Chance(0.5)) q.spec_hard.emplace_back("memory", Q(std::to_string(8 + Uniform(64)) + "Gi"));
  if (Chance(0.5)) {
    q.status_hard = q.spec_hard;
    q.status_used.emplace_back("cpu", Q(Milli(static_cast<int64_t>(Uniform(4000)))));
  }
  if (Chance(0.03)) q.status_used.emplace_back("memory", Q("-3"));  // refused
  const std::string key = q.metadata.namespace_ + "/" + q.metadata.name;
  RandomStep step;
  step.single_call = true;
  step.what = "put quota " + key;
  auto cur = quotas_.find(key);
  step.status =
      cur == quotas_.end() ? cache_->AddResourceQuota(q) : cache_->UpdateResourceQuota(cur->second, q);
  quotas_[key] = q;
  return step;
}

RandomStep RandomCluster::DeleteQuota() {
  k8s::ResourceQuota q;
  q.metadata.namespace_ = RandomNamespace();
  q.metadata.name = "rq" + std::to_string(Uniform(2));
  quotas_.erase(q.metadata.namespace_ + "/" + q.metadata.name);
  RandomStep step;
  step.single_call = true;
  step.what = "delete quota " + q.metadata.namespace_ + "/" + q.metadata.name;
  step.status = cache_->DeleteResourceQuota(q);
  return step;
}

RandomStep RandomCluster::Bind() {
  std::string key;
  if (Chance(0.75)) {
    // Prefer pods the cluster still shows unscheduled: mostly Pending tasks in the cache.
    std::vector<const std::string*> candidates;
    for (const auto& [k, d] : pods_) {
      if (d.node.empty() && d.phase == "Pending" && !d.deleting && !d.group.empty() && !d.invalid &&
          d.scheduler == options_.scheduler_name && !binds_.count(k)) {
        candidates.push_back(&k);
      }
    }
    if (!candidates.empty()) key = *candidates[Uniform(candidates.size())];
  }
  if (key.empty()) {
    key = Chance(0.9) && !pods_.empty() ? PickFrom(pods_)->first : RandomNamespace() + "/" + RandomPodName();
  }
  std::string node = Chance(0.9) && !nodes_.empty() ? PickFrom(nodes_)->first : RandomNodeName(true);
  RandomStep step;
  step.single_call = true;
  step.what = "bind " + key + " to " + node;
  step.status = cache_->AddBindTask(key, node);
  if (step.status.ok()) binds_[key] = node;
  return step;
}

RandomStep RandomCluster::FinishBinding() {
  PruneBinds();
  const auto* b = PickFrom(binds_);
  std::string key = b && Chance(0.9) ? b->first : RandomNamespace() + "/" + RandomPodName();
  RandomStep step;
  step.single_call = true;
  step.what = "finish binding " + key;
  step.status = cache_->FinishBinding(key);
  return step;
}

RandomStep RandomCluster::Forget() {
  PruneBinds();
  const auto* b = PickFrom(binds_);
  std::string key = b ? b->first : RandomNamespace() + "/" + RandomPodName();
  std::string node = b && Chance(0.85) ? b->second : RandomNodeName(true);
  RandomStep step;
  step.single_call = true;
  step.what = "forget " + key + " on " + node;
  step.status = cache_->ForgetTask(key, node);
  if (step.status.ok()) binds_.erase(key);
  return step;
}

RandomStep RandomCluster::Evict() {
  std::string key;
  std::vector<const std::string*> candidates;
  for (const auto& [k, d] : pods_) {
    if (!d.node.empty() || binds_.count(k)) candidates.push_back(&k);
  }
  if (!candidates.empty() && Chance(0.85)) {
    key = *candidates[Uniform(candidates.size())];
  } else {
    key = RandomNamespace() + "/" + RandomPodName();
  }
  RandomStep step;
  step.single_call = true;
  step.what = "evict " + key;
  step.status = cache_->Evict(key, "random");
  return step;
}

RandomStep RandomCluster::AdvanceClock() {
  static constexpr int64_t kMs[] = {1, 20, 500, 5'000, 31'000, 120'000};
  int64_t ms = kMs[Uniform(std::size(kMs))];
  clock_->Advance(std::chrono::milliseconds(ms));
  size_t expired = cache_->CleanupExpiredAssumed();
  RandomStep step;
  step.what = "advance " + std::to_string(ms) + "ms, " + std::to_string(expired) + " assumed expired";
  return step;
}

RandomStep RandomCluster::Resync() {
  std::string key =
      !pods_.empty() && Chance(0.8) ? PickFrom(pods_)->first : RandomNamespace() + "/" + RandomPodName();
  RandomStep step;
  step.single_call = true;
  step.what = "resync " + key;
  step.status = cache_->ResyncTask(key);
  return step;
}

RandomStep RandomCluster::Drain() {
  size_t n = cache_->DrainQueuesOnce();
  RandomStep step;
  step.what = "drain queues (" + std::to_string(n) + " items)";
  return step;
}

RandomStep RandomCluster::TakeEvictions() {
  auto reqs = cache_->TakeEvictionRequests();
  RandomStep step;
  step.what = "take " + std::to_string(reqs.size()) + " eviction request(s)";
  return step;
}

void RandomCluster::Populate() {
  for (int i = 0; i < options_.nodes; ++i) {
    NodeDesc d;
    d.name = "node-" + std::to_string(i);
    d.gpu = i % 2 == 0 ? 4 : 0;
    d.rv = next_rv_++;
    k8s::NodePtr node = d.Build();
    source_.PutNode(node);
    nodes_[d.name] = d;
    cache_->AddNode(*node);
  }
  cache_->DrainQueuesOnce();
  for (const char* ns : kNamespaces) {
    for (int j = 0; j < options_.jobs_per_namespace; ++j) {
      auto pg = std::make_shared<k8s::PodGroup>();
      pg->metadata.name = "j" + std::to_string(j);
      pg->metadata.namespace_ = ns;
      pg->metadata.uid = "pg-uid-" + std::to_string(next_uid_++);
      pg->metadata.resource_version = std::to_string(next_rv_++);
      pg->spec.min_member = 1;
      pod_groups_[std::string(ns) + "/" + pg->metadata.name] = pg;
      (void)cache_->AddPodGroup(pg);
    }
  }
}

void RandomCluster::Quiesce() {
  for (int i = 0; i < 3; ++i) {
    clock_->Advance(std::chrono::seconds(1100));
    cache_->DrainQueuesOnce();
  }
}

}  // namespace volcache::testing
