#pragma once
// EventSink: where a feeder delivers the cluster's changes — the one thing the Kubernetes
// connector's reflectors, the simulated cluster's watch and the replay script need of the
// cache. SchedulerCache implements it; a feeder is given an EventSink* and never sees the
// rest of the cache (snapshots, the bind state machine, the retry queues).
//
// Every call returns OK or the cache's refusal (a bad object, an unknown kind) and a refusal
// changes nothing; feeders log and count refusals, they never stop on one.
//
// Thread-safety: implementations are safe for concurrent use.

#include <memory>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache {

// What a watch event says happened to an object.
enum class EventType { kAdd, kUpdate, kDelete };

class EventSink {
 public:
  virtual ~EventSink();

  // One decoded object, dispatched by kind. Add and update are the same for the cache (an
  // update is resolved against the cached object); delete removes what the cache holds.
  // Unstructured kinds are refused.
  virtual Status Apply(EventType type, const k8s::Object& obj) = 0;

  // The same, for a feeder that keeps shared versions (a reflector's store): the sink may
  // keep `obj` itself instead of a copy.
  virtual Status Add(std::shared_ptr<const k8s::Object> obj) = 0;
  // An update with the feeder's previous version of the object (both of the same kind).
  virtual Status Update(std::shared_ptr<const k8s::Object> old_obj,
                        std::shared_ptr<const k8s::Object> new_obj) = 0;
};

}  // namespace volcache
