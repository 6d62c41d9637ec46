// Decoding the storage objects kube-scheduler's VolumeBinding and VolumeZone filters read:
// core/v1 PersistentVolumeClaims and PersistentVolumes and storage.k8s.io/v1 StorageClasses,
// as `kubectl get -o json` returns them (alone, in Lists, in watch events, in YAML manifests);
// the beta storage-class annotation's precedence; and errors that name the object and field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"
#include "api/k8s/dump.h"

namespace volcache::k8s {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
T MustDecode(const std::string& text) {
  auto r = DecodeObject(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return T{};
  const T* t = std::get_if<T>(&*r);
  EXPECT_NE(t, nullptr) << "got " << DescribeObject(*r);
  return t != nullptr ? *t : T{};
}

// A claim of a StatefulSet on kind's local-path provisioner, bound (kubectl get pvc -o json).
constexpr const char* kBoundClaim = R"({
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {
        "annotations": {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
            "volume.beta.kubernetes.io/storage-provisioner": "rancher.io/local-path",
            "volume.kubernetes.io/selected-node": "kind-worker",
            "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path"
        },
        "creationTimestamp": "2024-03-11T09:21:44Z",
        "finalizers": ["kubernetes.io/pvc-protection"],
        "labels": {"app": "web"},
        "name": "www-web-0",
        "namespace": "default",
        "resourceVersion": "1543",
        "uid": "6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10"
    },
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "storageClassName": "standard",
        "volumeMode": "Filesystem",
        "volumeName": "pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10"
    },
    "status": {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
        "phase": "Bound"
    }
})";

// The volume local-path provisioned for it: a hostPath pinned to one node.
constexpr const char* kLocalVolume = R"({
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {
        "annotations": {
            "local.path.provisioner/selected-node": "kind-worker",
            "pv.kubernetes.io/provisioned-by": "rancher.io/local-path"
        },
        "creationTimestamp": "2024-03-11T09:21:47Z",
        "finalizers": ["kubernetes.io/pv-protection"],
        "name": "pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10",
        "resourceVersion": "1540",
        "uid": "0e5a1f0d-3c52-4a8e-8d2b-9a4f6c1d7e33"
    },
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "name": "www-web-0",
            "namespace": "default",
            "resourceVersion": "1535",
            "uid": "6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10"
        },
        "hostPath": {
            "path": "/var/local-path-provisioner/pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10_default_www-web-0",
            "type": "DirectoryOrCreate"
        },
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["kind-worker"]}]}
                ]
            }
        },
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": "standard",
        "volumeMode": "Filesystem"
    },
    "status": {"phase": "Bound"}
})";

// A GCE persistent disk of the in-tree plugin: zone labels (VolumeZone), no nodeAffinity, the
// class in the beta annotation only (volumes provisioned before storageClassName existed).
constexpr const char* kZonalDisk = R"({
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {
        "annotations": {
            "kubernetes.io/createdby": "gce-pd-dynamic-provisioner",
            "pv.kubernetes.io/bound-by-controller": "yes",
            "pv.kubernetes.io/provisioned-by": "kubernetes.io/gce-pd",
            "volume.beta.kubernetes.io/storage-class": "ssd"
        },
        "creationTimestamp": "2019-06-03T14:02:11Z",
        "labels": {
            "failure-domain.beta.kubernetes.io/region": "us-central1",
            "failure-domain.beta.kubernetes.io/zone": "us-central1-c",
            "topology.kubernetes.io/region": "us-central1",
            "topology.kubernetes.io/zone": "us-central1-c"
        },
        "name": "pvc-1b2e4c1e-8604-11e9-8f4e-42010a800002",
        "resourceVersion": "88211",
        "uid": "1d0a3a8e-8604-11e9-8f4e-42010a800002"
    },
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "10Gi"},
        "gcePersistentDisk": {"fsType": "ext4", "pdName": "gke-prod-1b2e4c1e-8604-11e9-8f4e-42010a800002"},
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": "standard"
    },
    "status": {"phase": "Available"}
})";

// kind's default class (kubectl get storageclass standard -o json).
constexpr const char* kKindStandard = R"({
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"},\"name\":\"standard\"},\"provisioner\":\"rancher.io/local-path\",\"reclaimPolicy\":\"Delete\",\"volumeBindingMode\":\"WaitForFirstConsumer\"}\n",
            "storageclass.kubernetes.io/is-default-class": "true"
        },
        "creationTimestamp": "2024-03-11T09:15:02Z",
        "name": "standard",
        "resourceVersion": "266",
        "uid": "b3c5d0d8-58a8-4a4e-9a3c-1f7a2e6d4c55"
    },
    "provisioner": "rancher.io/local-path",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer"
})";

TEST(DecodeStorageTest, BoundClaimFromTheApiServer) {
  const auto pvc = MustDecode<PersistentVolumeClaim>(kBoundClaim);
  EXPECT_EQ(pvc.metadata.namespace_, "default");
  EXPECT_EQ(pvc.metadata.name, "www-web-0");
  EXPECT_EQ(pvc.metadata.resource_version, "1543");
  EXPECT_EQ(pvc.volume_name, "pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10");
  EXPECT_EQ(pvc.storage_class_name, std::optional<std::string>("standard"));
  EXPECT_EQ(pvc.phase, "Bound");
}

TEST(DecodeStorageTest, LocalVolumeWithNodeAffinity) {
  const auto pv = MustDecode<PersistentVolume>(kLocalVolume);
  EXPECT_EQ(pv.metadata.name, "pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10");
  EXPECT_TRUE(pv.metadata.namespace_.empty());
  EXPECT_EQ(pv.storage_class_name, "standard");
  EXPECT_EQ(pv.phase, "Bound");
  ASSERT_TRUE(pv.node_affinity.has_value());
  ASSERT_EQ(pv.node_affinity->size(), 1u);
  EXPECT_THAT((*pv.node_affinity)[0].match_expressions,
              ElementsAre(NodeSelectorRequirement{"kubernetes.io/hostname", "In", {"kind-worker"}}));
  EXPECT_TRUE((*pv.node_affinity)[0].match_fields.empty());
  EXPECT_EQ(DescribeObject(Object(pv)), "PersistentVolume pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10");
}

TEST(DecodeStorageTest, ZonalDiskLabelsAndBetaClass) {
  const auto pv = MustDecode<PersistentVolume>(kZonalDisk);
  EXPECT_EQ(pv.metadata.labels.at("topology.kubernetes.io/zone"), "us-central1-c");
  EXPECT_EQ(pv.metadata.labels.at("topology.kubernetes.io/region"), "us-central1");
  EXPECT_FALSE(pv.node_affinity.has_value());  // every node
  EXPECT_EQ(pv.storage_class_name, "ssd");     // the annotation over spec.storageClassName
  EXPECT_EQ(pv.phase, "Available");
}

TEST(DecodeStorageTest, StorageClassFromTheApiServer) {
  const auto sc = MustDecode<StorageClass>(kKindStandard);
  EXPECT_EQ(sc.metadata.name, "standard");
  EXPECT_EQ(sc.provisioner, "rancher.io/local-path");
  EXPECT_EQ(sc.volume_binding_mode, "WaitForFirstConsumer");
  EXPECT_EQ(KindOf(Object(sc)), "StorageClass");

  // The API server defaults an unset volumeBindingMode to Immediate; null reads as unset.
  for (const char* mode : {"", R"(,"volumeBindingMode":null)", R"(,"volumeBindingMode":"Immediate")"}) {
    const auto d =
        MustDecode<StorageClass>(std::string(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass",)"
                                             R"("metadata":{"name":"gp2"},"provisioner":"ebs.csi.aws.com")") +
                                 mode + "}");
    EXPECT_EQ(d.volume_binding_mode, "Immediate") << mode;
    EXPECT_EQ(d.provisioner, "ebs.csi.aws.com");
  }
}

// kube's GetPersistentVolumeClaimClass / GetPersistentVolumeClass: the beta annotation, when
// present (even empty), wins over spec.storageClassName.
TEST(DecodeStorageTest, BetaAnnotationTakesPrecedence) {
  struct Case {
    const char* annotations;  // metadata.annotations
    const char* spec;         // spec
    std::optional<std::string> claim_class;
    std::string volume_class;
  };
  const Case cases[] = {
      {R"({"volume.beta.kubernetes.io/storage-class":"gold"})", R"({"storageClassName":"standard"})", "gold",
       "gold"},
      {R"({"volume.beta.kubernetes.io/storage-class":""})", R"({"storageClassName":"standard"})", "", ""},
      {R"({"volume.beta.kubernetes.io/storage-class":"gold"})", "{}", "gold", "gold"},
      {R"({"other":"x"})", R"({"storageClassName":"standard"})", "standard", "standard"},
      {R"({})", R"({"storageClassName":""})", "", ""},  // "": explicitly no class
      {R"({})", R"({"storageClassName":null})", std::nullopt, ""},
      {R"({})", "{}", std::nullopt, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.annotations) + " " + c.spec);
    const std::string meta = std::string(R"("metadata":{"name":"x","namespace":"ns","annotations":)") +
                             c.annotations + "},\"spec\":" + c.spec + "}";
    const auto pvc =
        MustDecode<PersistentVolumeClaim>(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",)" + meta);
    EXPECT_EQ(pvc.storage_class_name, c.claim_class);
    const auto pv = MustDecode<PersistentVolume>(R"({"apiVersion":"v1","kind":"PersistentVolume",)" + meta);
    EXPECT_EQ(pv.storage_class_name, c.volume_class);
  }
}

TEST(DecodeStorageTest, VolumeNodeAffinityForms) {
  auto pv = [](const std::string& node_affinity) {
    return MustDecode<PersistentVolume>(
        R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},)"
        R"("spec":{"nodeAffinity":)" +
        node_affinity + "}}");
  };
  // Without `required` nothing constrains the volume (kube's CheckNodeAffinity).
  EXPECT_FALSE(pv("{}").node_affinity.has_value());
  EXPECT_FALSE(pv("null").node_affinity.has_value());
  // `required` with no terms matches no node.
  const auto none = pv(R"({"required":{"nodeSelectorTerms":[]}})");
  ASSERT_TRUE(none.node_affinity.has_value());
  EXPECT_TRUE(none.node_affinity->empty());
  // Terms ORed; every operator, matchFields on metadata.name.
  const auto many = pv(R"({"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["a","b"]},
                           {"key":"disk","operator":"Exists"},{"key":"cores","operator":"Gt","values":["+8"]}]},
      {"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n1"]}]}]}})");
  ASSERT_TRUE(many.node_affinity.has_value());
  ASSERT_EQ(many.node_affinity->size(), 2u);
  EXPECT_THAT((*many.node_affinity)[0].match_expressions,
              ElementsAre(NodeSelectorRequirement{"topology.kubernetes.io/zone", "In", {"a", "b"}},
                          NodeSelectorRequirement{"disk", "Exists", {}},
                          NodeSelectorRequirement{"cores", "Gt", {"+8"}}));
  EXPECT_THAT((*many.node_affinity)[1].match_fields,
              ElementsAre(NodeSelectorRequirement{"metadata.name", "NotIn", {"n1"}}));
}

TEST(DecodeStorageTest, ListsWatchEventsAndYaml) {
  auto list =
      DecodeList(R"({"apiVersion":"v1","kind":"PersistentVolumeClaimList","metadata":{"resourceVersion":"7"},
      "items":[{"metadata":{"name":"a","namespace":"ns"},"spec":{"volumeName":"pv-a"},"status":{"phase":"Bound"}},
               {"metadata":{"name":"b","namespace":"ns"},"status":{"phase":"Pending"}}]})");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(DescribeObject(list->items[0]), "PersistentVolumeClaim ns/a");
  EXPECT_EQ(std::get<PersistentVolumeClaim>(list->items[0]).volume_name, "pv-a");
  EXPECT_EQ(std::get<PersistentVolumeClaim>(list->items[1]).phase, "Pending");

  auto scs = DecodeList(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClassList","metadata":{},
      "items":[{"metadata":{"name":"standard"},"provisioner":"rancher.io/local-path"}]})");
  ASSERT_TRUE(scs.ok()) << scs.status().ToString();
  ASSERT_EQ(scs->items.size(), 1u);
  EXPECT_EQ(std::get<StorageClass>(scs->items[0]).provisioner, "rancher.io/local-path");

  const std::string event = std::string(R"({"type":"MODIFIED","object":)") + kLocalVolume + "}";
  auto ev = DecodeWatchEvent(event);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->type, WatchEventType::kModified);
  ASSERT_TRUE(ev->object.has_value());
  EXPECT_EQ(std::get<PersistentVolume>(*ev->object).phase, "Bound");
  // The streaming path takes Pods and Nodes only; these go to the reference decoder.
  WatchEvent fast;
  EXPECT_FALSE(FastDecodeWatchEvent(event, &fast));
  EXPECT_EQ(CanonicalDump(*ev), CanonicalDump(*DecodeWatchEventReference(event)));

  auto docs = DecodeYamlDocuments(R"(apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: local-pv-1
  labels: {topology.kubernetes.io/zone: zone-a}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disks/ssd1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [node-1]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: team-a}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 100Gi}}
)");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ(std::get<StorageClass>((*docs)[0]).volume_binding_mode, "WaitForFirstConsumer");
  const auto& local = std::get<PersistentVolume>((*docs)[1]);
  EXPECT_EQ(local.storage_class_name, "local");
  ASSERT_TRUE(local.node_affinity.has_value());
  EXPECT_EQ((*local.node_affinity)[0].match_expressions[0].values, std::vector<std::string>{"node-1"});
  const auto& claim = std::get<PersistentVolumeClaim>((*docs)[2]);
  EXPECT_EQ(DescribeObject((*docs)[2]), "PersistentVolumeClaim team-a/data");
  EXPECT_EQ(claim.storage_class_name, std::optional<std::string>("local"));
  EXPECT_TRUE(claim.volume_name.empty());
}

TEST(DecodeStorageTest, DumpCarriesEveryField) {
  const std::string claim = CanonicalDump(Object(MustDecode<PersistentVolumeClaim>(kBoundClaim)));
  EXPECT_THAT(claim, HasSubstr(R"("kind":"PersistentVolumeClaim")"));
  EXPECT_THAT(claim, HasSubstr(R"("storage_class_name":["standard"])"));
  EXPECT_THAT(claim, HasSubstr(R"("volume_name":"pvc-6f0c9d4e-8b1a-4f4e-9d57-0c6a3b7e2f10")"));
  EXPECT_THAT(claim, HasSubstr(R"("phase":"Bound")"));
  const std::string volume = CanonicalDump(Object(MustDecode<PersistentVolume>(kLocalVolume)));
  EXPECT_THAT(volume,
              HasSubstr(R"("node_affinity":[[{"match_expressions":[{"key":"kubernetes.io/hostname")"));
  EXPECT_THAT(volume, HasSubstr(R"("storage_class_name":"standard")"));
  const std::string zonal = CanonicalDump(Object(MustDecode<PersistentVolume>(kZonalDisk)));
  EXPECT_THAT(zonal, HasSubstr(R"("node_affinity":[])"));
  const std::string sc = CanonicalDump(Object(MustDecode<StorageClass>(kKindStandard)));
  EXPECT_THAT(sc, HasSubstr(R"("provisioner":"rancher.io/local-path")"));
  EXPECT_THAT(sc, HasSubstr(R"("volume_binding_mode":"WaitForFirstConsumer")"));
}

// ------------------------------------------------------------------------- bad input

struct BadCase {
  const char* name;
  const char* input;
  const char* want;  // the whole error message
};

#define PV_WITH_AFFINITY(terms)                                                                        \
  R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"nodeAffinity":)" \
  R"({"required":{"nodeSelectorTerms":)" terms "}}}}"

const BadCase kBadCases[] = {
    {"pv unknown operator",
     PV_WITH_AFFINITY(R"([{"matchExpressions":[{"key":"zone","operator":"Near","values":["a"]}]}])"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: "
     "\"Near\" is not a valid node selector operator"},
    {"pv gt not an integer",
     PV_WITH_AFFINITY(R"([{}, {"matchExpressions":[{"key":"cores","operator":"Gt","values":["eight"]}]}])"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms[1].matchExpressions[0].values[0]: "
     "\"eight\" is not an integer (operator Gt compares integers)"},
    {"pv lt two values",
     PV_WITH_AFFINITY(R"([{"matchExpressions":[{"key":"cores","operator":"Lt","values":["1","2"]}]}])"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: "
     "must hold exactly one value for operator Lt, got 2"},
    {"pv in without values", PV_WITH_AFFINITY(R"([{"matchExpressions":[{"key":"zone","operator":"In"}]}])"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: "
     "must be non-empty for operator In"},
    {"pv match field key",
     PV_WITH_AFFINITY(R"([{"matchFields":[{"key":"spec.unschedulable","operator":"In","values":["x"]}]}])"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: "
     "\"spec.unschedulable\" is not a valid node field selector key (only metadata.name)"},
    {"pv terms not an array", PV_WITH_AFFINITY(R"({"matchExpressions":[]})"),
     "PersistentVolume pv-1: spec.nodeAffinity.required.nodeSelectorTerms: expected array, got object"},
    {"pv node affinity not an object",
     R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"nodeAffinity":[]}})",
     "PersistentVolume pv-1: spec.nodeAffinity: expected object, got array"},
    {"pv storage class not a string",
     R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"storageClassName":3}})",
     "PersistentVolume pv-1: spec.storageClassName: expected string, got number 3"},
    {"pv phase not a string",
     R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"status":{"phase":true}})",
     "PersistentVolume pv-1: status.phase: expected string, got boolean"},
    {"pvc storage class not a string",
     R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"ns"},)"
     R"("spec":{"storageClassName":["gold"]}})",
     "PersistentVolumeClaim ns/data: spec.storageClassName: expected string, got array"},
    {"pvc volume name not a string",
     R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"ns"},)"
     R"("spec":{"volumeName":{}}})",
     "PersistentVolumeClaim ns/data: spec.volumeName: expected string, got object"},
    {"pvc beta annotation not a string",
     R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"ns",)"
     R"("annotations":{"volume.beta.kubernetes.io/storage-class":1}}})",
     "PersistentVolumeClaim ns/data: metadata.annotations[volume.beta.kubernetes.io/storage-class]: "
     "expected string, got number 1"},
    {"pvc without a name",
     R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"namespace":"ns"}})",
     "PersistentVolumeClaim ns/<unknown>: metadata.name: missing required field"},
    {"storage class unknown binding mode",
     R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},)"
     R"("provisioner":"pd.csi.storage.gke.io","volumeBindingMode":"Lazy"})",
     "StorageClass fast: volumeBindingMode: \"Lazy\" is not one of Immediate, WaitForFirstConsumer"},
    {"storage class empty binding mode",
     R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"volumeBindingMode":""})",
     "StorageClass fast: volumeBindingMode: \"\" is not one of Immediate, WaitForFirstConsumer"},
    {"storage class binding mode not a string",
     R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"volumeBindingMode":1})",
     "StorageClass fast: volumeBindingMode: expected string, got number 1"},
    {"storage class provisioner not a string",
     R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":{}})",
     "StorageClass fast: provisioner: expected string, got object"},
    {"storage class unknown version",
     R"({"apiVersion":"storage.k8s.io/v2","kind":"StorageClass","metadata":{"name":"fast"}})",
     "StorageClass fast: apiVersion: unsupported version \"storage.k8s.io/v2\" for StorageClass "
     "(group \"storage.k8s.io\")"},
    {"pvc unknown version", R"({"apiVersion":"v2","kind":"PersistentVolumeClaim","metadata":{"name":"d"}})",
     "PersistentVolumeClaim d: apiVersion: unsupported version \"v2\" for PersistentVolumeClaim (group "
     "\"\")"},
};

#undef PV_WITH_AFFINITY

TEST(DecodeStorageTest, ErrorsNameObjectAndField) {
  for (const BadCase& c : kBadCases) {
    SCOPED_TRACE(c.name);
    const Status st = DecodeObject(c.input).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_EQ(st.message(), c.want);
    Object obj;
    EXPECT_FALSE(FastDecodeObject(c.input, &obj));
  }
  // Inside a List and a watch event the error names the item and the object.
  auto list = DecodeList(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClassList","items":[
      {"metadata":{"name":"ok"}},{"metadata":{"name":"bad"},"volumeBindingMode":"Later"}]})");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(
      list.status().message(),
      "StorageClassList items[1]: StorageClass bad: volumeBindingMode: \"Later\" is not one of Immediate, "
      "WaitForFirstConsumer");
  auto ev = DecodeWatchEvent(R"({"type":"ADDED","object":{"apiVersion":"v1","kind":"PersistentVolume",
      "metadata":{"name":"pv-9"},"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"k","operator":"Exists","values":["v"]}]}]}}}}})");
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(
      ev.status().message(),
      "PersistentVolume pv-9: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: "
      "must be empty for operator Exists");
}

}  // namespace
}  // namespace volcache::k8s
