#pragma once
// The node-level placement checks of kube-scheduler v1.24's filter plugins, as pure functions
// of a pod spec and a Node object: what the session's predicates (session/constraints.h) and
// the simulated kubelet's admission (sim/) both apply.
//
//   * NodeAffinity: spec.nodeSelector (every entry equal in the node's labels) and required
//     node affinity (terms ORed, requirements ANDed; an empty term matches no node; In, NotIn,
//     Exists, DoesNotExist, Gt and Lt on labels — NotIn and DoesNotExist hold when the label is
//     missing, Gt/Lt compare the label as an integer and fail when it is not one; matchFields
//     on metadata.name).
//   * TaintToleration: a taint is tolerated by a toleration of its effect (or of every effect)
//     whose key matches (an empty key with Exists matches every key) and, for Equal, whose
//     value matches.
//   * NodePorts: two host ports conflict when their protocol and port are equal and their IPs
//     are equal or either is 0.0.0.0 (written "" here, as TaskMeta keeps it).
//   * InterPodAffinity's term matching: a term selects a pod when the pod's namespace is in the
//     term's namespaces (its owner's namespace when it names none and has no namespaceSelector)
//     or its namespaceSelector matches the namespace's labels, and its labelSelector (null:
//     nothing) matches the pod's labels. Namespace labels are not watched: a namespace is taken
//     to carry only `kubernetes.io/metadata.name: <name>`, the label every namespace has.
//   * VolumeBinding and VolumeZone, for a pod's PersistentVolumeClaims (api/volume_info.h):
//     every claim must exist and not be terminating; a bound claim (spec.volumeName) needs its
//     PersistentVolume, whose required node affinity the node must match and whose zone and
//     region labels (topology.kubernetes.io/* and failure-domain.beta.kubernetes.io/*, several
//     values joined by "__") must hold the node's value of that label when the node has any
//     such label. An unbound claim makes the pod unschedulable: with no class or an Immediate
//     class it waits for the PV controller, as in kube-scheduler; with a WaitForFirstConsumer
//     class kube-scheduler would choose a volume or provision one, which volcache does not do.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string_view>
#include <vector>

#include "api/k8s/objects.h"
#include "api/task_info.h"
#include "api/volume_info.h"

namespace volcache::placement {

// kube-scheduler's fit-error reasons.
inline constexpr std::string_view kReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector";
inline constexpr std::string_view kReasonNodePorts =
    "node(s) didn't have free ports for the requested pod ports";
inline constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
inline constexpr std::string_view kReasonPodAffinity = "node(s) didn't match pod affinity rules";
inline constexpr std::string_view kReasonPodAntiAffinity = "node(s) didn't match pod anti-affinity rules";
inline constexpr std::string_view kReasonExistingAntiAffinity =
    "node(s) didn't satisfy existing pods anti-affinity rules";
inline constexpr std::string_view kReasonSpread = "node(s) didn't match pod topology spread constraints";
inline constexpr std::string_view kReasonSpreadLabel =
    "node(s) didn't match pod topology spread constraints (missing required label)";
inline constexpr std::string_view kReasonTooManyPods = "Too many pods";
inline constexpr std::string_view kReasonVolumeNodeConflict = "node(s) had volume node affinity conflict";
inline constexpr std::string_view kReasonVolumeZone = "node(s) had no available volume zone";
inline constexpr std::string_view kReasonUnboundImmediate =
    "pod has unbound immediate PersistentVolumeClaims";
inline constexpr std::string_view kReasonPVNotExist =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
inline constexpr std::string_view kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";

bool RequirementMatches(const k8s::NodeSelectorRequirement& r, const k8s::StringMap& labels);
bool FieldRequirementMatches(const k8s::NodeSelectorRequirement& r, std::string_view node_name);
bool NodeSelectorTermMatches(const k8s::NodeSelectorTerm& term, const k8s::Node& node);
bool NodeSelectorTermsMatch(const std::vector<k8s::NodeSelectorTerm>& terms, const k8s::Node& node);
// The NodeAffinity filter: nodeSelector and required node affinity.
bool MatchesNodeAffinity(const k8s::PodSpec& spec, const k8s::Node& node);
// Whether the spec constrains nodes beyond the nodeSelector (required node affinity).
inline bool HasRequiredNodeAffinity(const k8s::PodSpec& spec) {
  return spec.rare && spec.rare->node_affinity.required.has_value();  // checked per node: no NoRare()
}
// The NodeAffinity score before normalization: the summed weights of the preferred terms the
// node matches.
int64_t PreferredNodeAffinityWeight(const k8s::PodSpec& spec, const k8s::Node& node);

bool Tolerates(const k8s::Toleration& t, std::string_view key, std::string_view value,
               std::string_view effect);
bool ToleratedBy(const std::vector<k8s::Toleration>& tolerations, std::string_view key,
                 std::string_view value, std::string_view effect);
// The first NoSchedule or NoExecute taint of the node that no toleration tolerates; null when none.
const k8s::Taint* FirstUntoleratedTaint(const std::vector<k8s::Toleration>& tolerations,
                                        const k8s::Node& node);
// The TaintToleration score before normalization: untolerated PreferNoSchedule taints.
int64_t IntolerablePreferNoScheduleTaints(const std::vector<k8s::Toleration>& tolerations,
                                          const k8s::Node& node);

// The host ports a pod asks for (its containers' ports with hostPort > 0; "" for 0.0.0.0).
std::vector<HostPort> WantedHostPorts(const k8s::PodSpec& spec);
bool HostPortsConflict(const HostPort& a, const HostPort& b);

// Whether the pod's namespace is selected by `term`, owned by a pod of `owner_namespace`.
bool TermSelectsNamespace(const k8s::PodAffinityTerm& term, std::string_view owner_namespace,
                          std::string_view pod_namespace);
// InterPodAffinity's AffinityTerm.Matches: namespace and label selector.
bool TermMatchesPod(const k8s::PodAffinityTerm& term, std::string_view owner_namespace, const k8s::Pod& pod);
// A topology spread constraint's selector over a pod (null selector: nothing).
bool SelectorMatches(const std::optional<k8s::LabelSelector>& selector, const k8s::StringMap& labels);

// VolumeBinding's per-pod part: resolves `claims` ("namespace/name", as TaskMeta::pvcs keeps
// them). Returns why the pod fits no node (the same for every node, in kube-scheduler's
// wording where it has one), or "" with the bound claims' PersistentVolumes in `bound`.
std::string ResolveClaims(const std::vector<std::string>& claims, const VolumeInfo& volumes,
                          std::vector<const k8s::PersistentVolume*>* bound);
// VolumeBinding's and VolumeZone's per-node part over ResolveClaims' volumes: the first
// failing reason, "" when the node fits them all.
std::string_view VolumeNodeConflict(const std::vector<const k8s::PersistentVolume*>& bound,
                                    const k8s::Node& node);

}  // namespace volcache::placement
