#pragma once
// VolumeInfo: the PersistentVolumeClaims, PersistentVolumes and StorageClasses a snapshot
// carries for kube-scheduler's VolumeBinding and VolumeZone filters (api/placement.h). The
// cache publishes one immutable version, shared by every snapshot until a volume object
// changes.
//
// Thread-safety: immutable once published.

#include <map>
#include <memory>
#include <string>

#include "api/k8s/objects.h"

namespace volcache {

struct VolumeInfo {
  std::map<std::string, std::shared_ptr<const k8s::PersistentVolumeClaim>, std::less<>> claims;  // ns/name
  std::map<std::string, std::shared_ptr<const k8s::PersistentVolume>, std::less<>> volumes;      // name
  std::map<std::string, std::shared_ptr<const k8s::StorageClass>, std::less<>> classes;          // name
};

}  // namespace volcache
