#pragma once
// `volcache bench watch`: the path `serve` runs from the API server into the cache — a
// kube::Connector (its reflectors and feeders) reading LIST pages and a chunked HTTP watch
// stream from an in-process loopback API server (bench/loopback_api_server.h) into a
// CacheRuntime's cache. Pods have the layout of the real watch events in
// ../shared/data/k8s/watch (managedFields, annotations, status), names varied; nodes that of
// ../shared/data/k8s/core/node-minikube-2020-01.json.
//   mode "events": N pod watch events (N/2 ADDED, then a MODIFIED for each) after an empty
//                  pod LIST; timed from the stream's release until the pod reflector applied
//                  all N (events/s).
//   mode "list":   a LIST of N pods, `limit=500` pages as client-go asks; timed from the
//                  connector's start until every reflector applied its first LIST (s).
// Each run checks the cache holds the N/2 (events) or N (list) tasks.
// Thread-safety: runs on the calling thread (the connector and server run their own).

#include <iosfwd>

#include "bench/runner.h"

namespace volcache::bench {

int WatchPath(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace volcache::bench
